// RUN: ziggurat-opt %s -p cse,canonicalize,dce --print-ir-after-change 2>&1 >/dev/null | filecheck %s
// Only passes that changed the IR are dumped: cse merges the duplicate constant,
// canonicalize folds the add; dce then finds nothing to do.

// CHECK:       // -----// IR Dump After CommonSubexpressionElimination (cse) //----- //
// CHECK-NEXT:  builtin.module {
// CHECK:       // -----// IR Dump After Canonicalize (canonicalize) //----- //
// CHECK-NEXT:  builtin.module {
// CHECK-NOT:   IR Dump

func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 1 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}
