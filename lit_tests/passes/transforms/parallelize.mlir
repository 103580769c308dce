// RUN: ziggurat-opt %s -p 'parallelize{loops=2}' | filecheck %s
// RUN: ziggurat-opt %s -p 'parallelize{loops=2},parallelize{loops=0}' | filecheck %s --check-prefix=OFF
// RUN: ziggurat-opt %s -p 'default-schedule{threads=4 cpu=znver4}' | filecheck %s --check-prefix=DEFAULT
// RUN: ziggurat-opt %s -p 'parallelize{loops=2},convert-linalg-to-loops' | filecheck %s --check-prefix=LOOPS
// RUN: not ziggurat-opt %s -p 'parallelize{loops=3}' 2>&1 | filecheck %s --check-prefix=RED
// RUN: not ziggurat-opt %s -p 'parallelize{loops=4}' 2>&1 | filecheck %s --check-prefix=MANY
// RUN: not ziggurat-opt %s -p 'parallelize{loops=-1}' 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not ziggurat-opt %s -p 'default-schedule{threads=0}' 2>&1 | filecheck %s --check-prefix=THREADS
// RUN: not ziggurat-opt %s -p 'default-schedule{threads=1099511627776}' 2>&1 | filecheck %s --check-prefix=THREADS
// `parallelize` sets how many outermost loops of the order run across threads; `parallel` is
// printed only when nonzero. The full cache tiles of those loops form one scf.parallel.

// CHECK: #sched.schedule<tile = [16, 32, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16, parallel = 2>
// OFF:   #sched.schedule<tile = [16, 32, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>

// default-schedule{threads=N} (this kernel has a schedule: it is kept) ...
// DEFAULT-LABEL: func.func @matmul
// DEFAULT:       #sched.schedule<tile = [16, 32, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>
// ... and tiles and parallelizes the outer loops of one that has none: 4 threads x 4 chunks
// (8 row tiles of one register tile each, then 2 column tiles)
// DEFAULT-LABEL: func.func @unscheduled
// DEFAULT:       #sched.schedule<tile = [8, 32, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16, parallel = 2>

// LOOPS-LABEL: func.func @matmul
// LOOPS:       %[[Z:.*]] = arith.constant 0 : index
// LOOPS:       "scf.parallel"(%[[Z]], %[[Z]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
// LOOPS-NEXT:  ^{{.*}}(%[[I:.*]]: index, %[[J:.*]]: index):
// LOOPS:       scf.for %{{.*}} = %[[I]] to
// LOOPS:       scf.reduce

// MANY: error: parallelize: option 'loops': 4 is out of range; allowed: 0..3 (the kernel has 3 loops)
// NEG:  error: parallelize: option 'loops': -1 is out of range; allowed: 0 (sequential) up to the kernel's number of loops
// THREADS: error: default-schedule: option 'threads': {{0|1099511627776}} is out of range; allowed: 1..1024

// RED: error: parallelize: loop 2 is a reduction: only the outermost parallel loops can run across threads (order [0, 1, 2], parallel = 3)

#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>

func.func @matmul(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %c: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%c : memref<64x64xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [16, 32, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}

func.func @unscheduled(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %c: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%c : memref<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}
