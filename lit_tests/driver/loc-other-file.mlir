// A location naming another file: the error names it, but the driver never opens it.
// RUN: not ziggurat-opt %s 2>&1 | filecheck %s

// CHECK:      /etc/passwd:1:1: error: 'arith.addi' op Expected 2 operands, but got 1
// CHECK-NOT:  root:
// CHECK-NOT:  ^

func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  %c = "arith.addi"(%a) : (i32) -> i32 loc("/etc/passwd":1:1)
  func.return %c : i32
}
