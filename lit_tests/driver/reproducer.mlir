// Generate a reproducer from a failing pass, then replay it.
// RUN: not ziggurat-opt %s -p 'cse,test-fail-pass' --reproducer %t.repro.mlir 2>&1 | filecheck %s --check-prefix=GEN
// RUN: filecheck %s --check-prefix=FILE --input-file=%t.repro.mlir
// RUN: not ziggurat-opt %t.repro.mlir --run-reproducer 2>&1 | filecheck %s --check-prefix=REPLAY
// A pass that breaks the IR: the reproducer holds its input, the verifier names the line.
// RUN: not ziggurat-opt %s -p 'test-fail-pass{mode="invalid-ir"}' --reproducer %t.invalid.mlir 2>&1 | filecheck %s --check-prefix=INVALID
// RUN: not ziggurat-opt %t.invalid.mlir --run-reproducer 2>&1 | filecheck %s --check-prefix=INVALID
// An internal error (a Python exception in a pass) also writes one.
// RUN: not ziggurat-opt %s -p 'test-fail-pass{mode="exception"}' --reproducer %t.crash.mlir 2>&1 | filecheck %s --check-prefix=CRASH
// RUN: filecheck %s --check-prefix=CRASHFILE --input-file=%t.crash.mlir

// GEN:         reproducer.mlir:32:3: error: 'arith.muli' op test-fail-pass: deliberate failure
// GEN:         ziggurat-opt: reproducer written to {{.*}}.repro.mlir

// FILE:        // ziggurat-opt reproducer: pass 'test-fail-pass' failed
// FILE:        // replay: ziggurat-opt {{.*}}.repro.mlir --run-reproducer
// FILE:        "arith.muli"
// FILE:        {-#
// FILE:        mlir_reproducer: {
// FILE-NEXT:     pipeline: "builtin.module(test-fail-pass)",

// REPLAY:      reproducer.mlir:32:3: error: 'arith.muli' op test-fail-pass: deliberate failure

// INVALID:     reproducer.mlir:32:3: error: 'arith.muli' op {{.*}}not a terminator

// CRASH:       ziggurat-opt: reproducer written to {{.*}}.crash.mlir
// CRASH:       ziggurat-opt: internal error in pass 'test-fail-pass': RuntimeError: test-fail-pass: deliberate internal error
// CRASH-NOT:   Traceback
// CRASHFILE:   pipeline: "builtin.module(test-fail-pass{mode=\"exception\"})"

func.func @f(%x: i32) -> i32 {
  %a = arith.muli %x, %x {test.fail} : i32
  func.return %a : i32
}
