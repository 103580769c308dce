// Pass options use xDSL's spec syntax (`name{opt=value other=1,2,3}`) and are checked.
// RUN: not ziggurat-opt %s -p 'test-fail-pass{mode="invalid-ir"}' 2>&1 | filecheck %s --check-prefix=OK
// RUN: not ziggurat-opt %s -p 'test-fail-pass{mdoe="x"}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not ziggurat-opt %s -p 'test-fail-pass{mode=3}' 2>&1 | filecheck %s --check-prefix=BADVALUE
// RUN: not ziggurat-opt %s -p 'cse{' 2>&1 | filecheck %s --check-prefix=SYNTAX

// OK:          error: 'arith.addi' op {{.*}}not a terminator
// OK:          note: pass 'test-fail-pass' produced IR that does not verify

// UNKNOWN:     ziggurat-opt: error: unknown option 'mdoe' for pass 'test-fail-pass' (did you mean 'mode'?) (valid options: mode)
// UNKNOWN-NOT: Traceback

// BADVALUE:    ziggurat-opt: error: invalid options for pass 'test-fail-pass' (test-fail-pass{mode=3}): Incompatible types
// BADVALUE-NOT: Traceback

// SYNTAX:      ziggurat-opt: error: invalid pass pipeline 'cse{'
// SYNTAX-NOT:  Traceback

func.func @f(%x: i32) -> i32 {
  %a = arith.addi %x, %x : i32
  func.return %a : i32
}
