// RUN: ziggurat-opt %s --split-input-file --verify-diagnostics
// RUN: sed 's/but got 1/but got 7/' %s > %t.mlir
// RUN: not ziggurat-opt %t.mlir --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=WRONG
// MLIR's spelling with a space before the location (`expected-error @+1`) is accepted as well
// as the compact one (`expected-error@+1`).

func.func @space_plus(%x: i32) -> i32 {
  // expected-error @+1 {{Expected 2 operands, but got 1}}
  %r = "arith.addi"(%x) : (i32) -> i32
  func.return %r : i32
}

// -----

func.func @space_below(%x: i32) -> i32 {
  // expected-error  @below {{Expected 2 operands}}
  %r = "arith.addi"(%x) : (i32) -> i32
  func.return %r : i32
}

// -----

func.func @space_regex(%x: i32) -> i32 {
  %r = "arith.addi"(%x) : (i32) -> i32
  // expected-error-re @above {{Expected [0-9] operands}}
  func.return %r : i32
}

// The spaced annotations are really read (not skipped as comments): with the first one's message
// changed (the second RUN line), the run fails and names it.
// WRONG-DAG: error: unexpected error: {{.*}}Expected 2 operands, but got 1
// WRONG-DAG: .mlir:8: error: expected error "Expected 2 operands, but got 7" was not produced
