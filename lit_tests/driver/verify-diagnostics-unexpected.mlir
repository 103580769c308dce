// RUN: not ziggurat-opt %s --verify-diagnostics 2>&1 | filecheck %s
// An error nobody expected fails the run; so does one on the wrong line.

// CHECK-DAG: verify-diagnostics-unexpected.mlir:12:3: error: unexpected error: 'arith.addi' op Expected 2 operands
// CHECK-DAG: verify-diagnostics-unexpected.mlir:10: error: expected error "Expected 2 operands" was not produced (expected on line 11)

func.func @f(%x: i32) -> i32 {
  %a = arith.constant 0 : i32
  // The annotation points one line too high.
  // expected-error@+1 {{Expected 2 operands}}
  %b = arith.constant 1 : i32
  %r = "arith.addi"(%x) : (i32) -> i32
  func.return %r : i32
}
