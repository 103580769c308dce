// RUN: ziggurat-opt %s -p canonicalize,cse --print-ir-before=cse 2>%t.err | filecheck %s --check-prefix=OUT
// RUN: filecheck %s --check-prefix=ERR --input-file=%t.err
// RUN: ziggurat-opt %s -p canonicalize,cse --print-ir-before-all 2>&1 >/dev/null | filecheck %s --check-prefix=ALL
// Dumps go to stderr with MLIR's header; stdout carries only the output IR.

// OUT-NOT:     IR Dump
// OUT:         func.func @f
// OUT-NOT:     IR Dump

// ERR-NOT:     IR Dump Before Canonicalize
// ERR:         // -----// IR Dump Before CommonSubexpressionElimination (cse) //----- //
// ERR-NEXT:    builtin.module {
// ERR-NEXT:      func.func @f() -> i32 {
// ERR-NEXT:        %{{.*}} = arith.constant 3 : i32
// ERR-NOT:     IR Dump

// ALL:         // -----// IR Dump Before Canonicalize (canonicalize) //----- //
// ALL-NEXT:    builtin.module {
// ALL:         %c = arith.addi
// ALL:         // -----// IR Dump Before CommonSubexpressionElimination (cse) //----- //

func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}
