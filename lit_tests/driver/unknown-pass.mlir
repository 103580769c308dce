// RUN: not ziggurat-opt %s -p canonicalise 2>&1 | filecheck %s
// RUN: not ziggurat-opt %s -p cse --print-ir-after=cdse 2>&1 | filecheck %s --check-prefix=DUMP
// RUN: not ziggurat-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=FLAG
// RUN: not ziggurat-opt %S/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING

// CHECK:       ziggurat-opt: error: unknown pass 'canonicalise' (did you mean 'canonicalize'
// CHECK-NOT:   Traceback

// DUMP:        ziggurat-opt: error: unknown pass 'cdse' in --print-ir-after (did you mean 'cse'

// FLAG:        ziggurat-opt: error: unrecognized arguments: --no-such-flag

// MISSING:     ziggurat-opt: error: could not open input file '{{.*}}does-not-exist.mlir': No such file or directory

func.func @f() {
  func.return
}
