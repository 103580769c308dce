// REQUIRES: mlir-opt
// The driver's output is real MLIR: upstream mlir-opt parses it.
// RUN: ziggurat-opt %s -p cleanup | mlir-opt | filecheck %s
// RUN: ziggurat-opt %s -p cleanup -o %t.mlir
// RUN: mlir-opt %t.mlir --verify-each | filecheck %s

// CHECK:       func.func @f() -> i32 {
// CHECK-NEXT:    %{{.*}} = arith.constant 3 : i32

func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}
