// RUN: not ziggurat-opt %s 2>&1 | filecheck %s
// xDSL reports undefined values at the end of the input; the driver points at the use.

// CHECK:       malformed-undefined.mlir:9:23: error: use of undeclared SSA value name %nope
// CHECK-NEXT:  %b = arith.addi %a, %nope : i32
// CHECK-NEXT:  {{^ +}}^

func.func @f(%a: i32) -> i32 {
  %b = arith.addi %a, %nope : i32
  func.return %b : i32
}
