// RUN: not ziggurat-opt %s --verify-diagnostics 2>&1 | filecheck %s
// A MISSING expected error must fail the run and name the annotation's line.

// CHECK: verify-diagnostics-missing.mlir:9: error: expected error "this error never happens" was not produced

func.func @f(%x: i32) -> i32 {
  %r = arith.addi %x, %x : i32
  // The IR above is valid, so nothing is reported.
  // expected-error@-2 {{this error never happens}}
  func.return %r : i32
}
