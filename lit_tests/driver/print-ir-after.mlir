// RUN: ziggurat-opt %s -p canonicalize,cse --print-ir-after=canonicalize 2>%t.err | filecheck %s --check-prefix=OUT
// RUN: filecheck %s --check-prefix=ERR --input-file=%t.err
// RUN: ziggurat-opt %s -p canonicalize,cse --mlir-print-ir-after=cse,canonicalize 2>&1 >/dev/null | filecheck %s --check-prefix=BOTH

// OUT-NOT:     IR Dump
// OUT:         arith.constant 3 : i32

// ERR:         // -----// IR Dump After Canonicalize (canonicalize) //----- //
// ERR-NEXT:    builtin.module {
// ERR-NEXT:      func.func @f() -> i32 {
// ERR-NEXT:        %{{.*}} = arith.constant 3 : i32
// ERR-NOT:     IR Dump

// BOTH:        IR Dump After Canonicalize (canonicalize)
// BOTH:        IR Dump After CommonSubexpressionElimination (cse)

func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}
