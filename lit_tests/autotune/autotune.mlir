// RUN: ziggurat-opt %s -p 'autotune{db="%S/Inputs/autotune-db.jsonl"}' | filecheck %s
// RUN: not ziggurat-opt %s -p 'autotune{db="%S/Inputs/no-such-db.jsonl"}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not ziggurat-opt %s -p 'autotune{db="%S/Inputs/autotune-db.jsonl" trials=-1}' 2>&1 | filecheck %s --check-prefix=TRIALS
// RUN: not ziggurat-opt %s -p 'autotune{db="%S/Inputs/autotune-db.jsonl" trials=1099511627776}' 2>&1 | filecheck %s --check-prefix=TRIALS
// RUN: not ziggurat-opt %s -p 'autotune{db="%S/Inputs/autotune-db.jsonl" threads=0}' 2>&1 | filecheck %s --check-prefix=THREADS
// RUN: not ziggurat-opt %s -p 'autotune{db="%S/Inputs/autotune-db.jsonl" tuner="best"}' 2>&1 | filecheck %s --check-prefix=TUNER
// TRIALS:  error: autotune: option 'trials': {{-1|1099511627776}} is out of range; allowed: 0..1000000
// THREADS: error: autotune: option 'threads': 0 is out of range; allowed: 1..1024
// TUNER:   error: autotune: option 'tuner': unknown tuner 'best' (available: xgb, random)

// `autotune{db=...}` gives each kernel the config of its task's best usable record, replayed as
// schedule passes on that kernel's anchor generic; a kernel without a record keeps no schedule
// (default-schedule gives it the analytic one later).
//
// Inputs/autotune-db.jsonl is generated from this file by the real code:
//     python lit_tests/passes/transforms/Inputs/make-autotune-db.py
// It computes @kernel_0's workload key with autotune.task.task_from_function, the space hashes with
// autotune.space.SearchSpace (one record set per distinct space: each vector width, 16/8/4, on each
// CPU preset and on the generating host, as the space depends on the register file and caches too,
// so that exactly one applies on a Zen 4/5, an AVX2 core or the like), samples configs with SearchSpace.sample (scalar ones, vector = -1, so that the
// schedule below is the same on every host), and stamps the installed compiler version. Besides the
// record that must be applied (2e-5 s), it holds records that must NOT be: a slower one, a faster one
// from another compiler version, a faster one that failed (wrong_result), a faster one with another
// space hash.
// REGENERATE Inputs/autotune-db.jsonl (and update the CHECK line from the script's output) whenever
// the compiler version (pyproject.toml), the search space (autotune/space.py) or the canonical
// kernel text changes: the records then no longer match and every kernel falls back.

// CHECK-LABEL: func.func private @kernel_0
// CHECK:       linalg.fill
// CHECK:       linalg.generic
// CHECK-SAME:  attrs = {sched.schedule = #sched.schedule<tile = [8, 0, 0], order = [0, 1, 2], unroll = [2, 4, 4], vector = -1, width = 1>}
// CHECK-LABEL: func.func private @kernel_1
// CHECK-NOT:   sched.schedule
// CHECK-LABEL: func.func @main

// MISSING: error: autotune: database not found: {{.*}}no-such-db.jsonl

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>

func.func private @kernel_0(%out: memref<32x64xf32>, %x: memref<32x48xf32>, %w: memref<48x64xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<32x64xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<32x48xf32>, memref<48x64xf32>) outs(%out : memref<32x64xf32>) {
  ^bb0(%in0: f32, %in1: f32, %acc: f32):
    %p = arith.mulf %in0, %in1 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  func.return
}

func.func private @kernel_1(%out: memref<32x64xf32>, %in: memref<32x64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%in : memref<32x64xf32>) outs(%out : memref<32x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %zero = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  }
  func.return
}

func.func @main(%x: memref<32x48xf32>, %w: memref<48x64xf32>, %y: memref<32x64xf32>, %tmp: memref<32x64xf32>) {
  func.call @kernel_0(%tmp, %x, %w) : (memref<32x64xf32>, memref<32x48xf32>, memref<48x64xf32>) -> ()
  func.call @kernel_1(%y, %tmp) : (memref<32x64xf32>, memref<32x64xf32>) -> ()
  func.return
}
