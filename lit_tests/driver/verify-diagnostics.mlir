// RUN: ziggurat-opt %s --split-input-file --verify-diagnostics
// Every form of annotation MLIR supports, matched by line, across split chunks:
// parse errors, verifier errors (located at the op's source line), and pass errors.

func.func @verifier(%x: i32) -> i32 {
  // expected-error@+1 {{'arith.addi' op}}
  %r = "arith.addi"(%x) : (i32) -> i32
  func.return %r : i32
}

// -----

func.func @same_line(%x: i32) -> i32 {
  %r = "arith.addi"(%x) : (i32) -> i32 // expected-error {{Expected 2 operands, but got 1}}
  func.return %r : i32
}

// -----

func.func @below(%x: i32) -> i32 {
  // expected-error@below {{Expected 2 operands}}
  %r = "arith.addi"(%x) : (i32) -> i32
  func.return %r : i32
}

// -----

func.func @above(%x: i32) -> i32 {
  %r = "arith.addi"(%x) : (i32) -> i32
  // expected-error@above {{Expected 2 operands}}
  func.return %r : i32
}

// -----

func.func @minus(%x: i32) -> i32 {
  %r = "arith.addi"(%x) : (i32) -> i32
  func.return %r : i32
  // expected-error@-2 {{Expected 2 operands}}
}

// -----

func.func @parse(%x: i32) {
  // expected-error@+1 {{use of undeclared SSA value name}}
  %q = arith.addi %x, %undefined : i32
  func.return
}

// -----

func.func @terminator(%x: i32) {
  // expected-error@+1 {{not a terminator}}
  %r = arith.addi %x, %x : i32
}

// -----

// A chunk without errors is fine too.
func.func @ok() {
  func.return
}
