// RUN: ziggurat-opt %s -p canonicalize,cse,dce --print-ir-after-all 2>%t.err | filecheck %s --check-prefix=OUT
// RUN: filecheck %s --check-prefix=ERR --input-file=%t.err
// xdsl-opt's --print-between-passes maps onto the same stderr dumps.
// RUN: ziggurat-opt %s -p canonicalize,cse --print-between-passes 2>/dev/null | filecheck %s --check-prefix=OUT

// OUT-NOT:     IR Dump
// OUT:         func.func @f
// OUT-NOT:     IR Dump

// ERR:         // -----// IR Dump After Canonicalize (canonicalize) //----- //
// ERR-NEXT:    builtin.module {
// ERR:         // -----// IR Dump After CommonSubexpressionElimination (cse) //----- //
// ERR-NEXT:    builtin.module {
// ERR:         // -----// IR Dump After DeadCodeElimination (dce) //----- //
// ERR-NEXT:    builtin.module {

func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}
