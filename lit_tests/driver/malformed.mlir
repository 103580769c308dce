// RUN: not ziggurat-opt %s 2>&1 | filecheck %s
// A syntax error is reported as file:line:col, with the source line and a caret.

// CHECK:       malformed.mlir:13:19: error: {{.*}}
// CHECK-NEXT:  %b = arith.addi %a, %a : i64
// CHECK-NEXT:  {{^ +}}^
// CHECK-NOT:   Traceback

func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  // %a is an i32, used here as an i64
  //
  %b = arith.addi %a, %a : i64
  func.return %b : i32
}
