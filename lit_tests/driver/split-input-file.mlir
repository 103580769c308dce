// RUN: not ziggurat-opt %s --split-input-file -p canonicalize 2>/dev/null | filecheck %s
// RUN: not ziggurat-opt %s --split-input-file -p canonicalize -o /dev/null 2>&1 | filecheck %s --check-prefix=DIAG
// Each chunk is processed on its own, outputs are joined by `// -----`, and a
// diagnostic in a later chunk carries the line number of the original file.

// CHECK:       func.func @first
// CHECK-NEXT:    arith.constant 3 : i32
// CHECK:       // -----
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @second
// CHECK:       // -----
// CHECK-NOT:   func.func @broken
// CHECK:       // -----
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @fourth

// DIAG: split-input-file.mlir:41:3: error: 'arith.addi' op
// DIAG-NEXT: "arith.addi"(%x) : (i32) -> i32
// DIAG-NOT: error

func.func @first() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}

// -----

func.func @second(%x: i32) -> i32 {
  func.return %x : i32
}

// -----

func.func @broken(%x: i32) -> i32 {
  // A verifier error: one operand instead of two. The error names line 41.
  // (comment lines keep the line number checked above stable)
  //
  //
  %r = "arith.addi"(%x) : (i32) -> i32
  func.return %r : i32
}

// -----

func.func @fourth() {
  func.return
}
