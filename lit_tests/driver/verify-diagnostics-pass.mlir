// RUN: ziggurat-opt %s --verify-diagnostics -p test-fail-pass
// A pass error is attributed to the op the pass complained about.

func.func @f(%x: i32) -> i32 {
  %a = arith.addi %x, %x : i32
  // expected-error@+1 {{test-fail-pass: deliberate failure}}
  %b = arith.muli %a, %a {test.fail} : i32
  func.return %b : i32
}
