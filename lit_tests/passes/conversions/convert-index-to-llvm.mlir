// RUN: ziggurat-opt %s -p convert-index-to-llvm | filecheck %s

// xDSL has no `index` dialect: this pass retypes `index` left in llvm ops to i64.
func.func @f(%a: i64) -> i64 {
  %c = llvm.mlir.constant(8 : index) : index
  %u = llvm.mlir.undef : index
  %i = builtin.unrealized_conversion_cast %c : index to i64
  %j = builtin.unrealized_conversion_cast %u : index to i64
  %r = llvm.add %i, %j : i64
  func.return %r : i64
}

// CHECK-LABEL: func.func @f
// CHECK: %c = llvm.mlir.constant(8) : i64
// CHECK: %u = llvm.mlir.undef : i64
// CHECK-NOT: llvm.{{.*}}: index
