// RUN: ziggurat-opt %s -p canonicalize,cse --timing 2>%t.err | filecheck %s --check-prefix=OUT
// RUN: filecheck %s --check-prefix=ERR --input-file=%t.err
// RUN: ziggurat-opt %s -p canonicalize --mlir-timing 2>&1 >/dev/null | filecheck %s --check-prefix=ALIAS
// RUN: ziggurat-opt %s -p canonicalize --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// The report (MLIR's -mlir-timing layout) goes to stderr, never into the output IR.

// OUT-NOT:     Execution time report
// OUT:         func.func @f
// OUT-NOT:     Execution time report

// ERR:         Execution time report
// ERR:         Total Execution Time: {{[0-9]+\.[0-9]+}} seconds
// ERR:         ----Wall Time----  ----Name----
// ERR-NEXT:    {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  Parser
// ERR-NEXT:    {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  canonicalize
// ERR-NEXT:    {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  cse
// ERR:         {{[0-9]+\.[0-9]+}} (100.0%)  Total

// ALIAS:       Execution time report

// STATS:       Pass statistics report
// STATS:       canonicalize
// STATS-NEXT:    (S)      1 runs
// STATS-NEXT:    (S)      5 ops-before
// STATS-NEXT:    (S)      3 ops-after

func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}
