// RUN: ziggurat-opt %s -p 'unroll-jam{factors=4,48,2}' | filecheck %s
// RUN: ziggurat-opt %s -p 'unroll-jam{factors=2,16,4 kernel=matmul}' | filecheck %s --check-prefix=ONE
// RUN: not ziggurat-opt %s -p 'unroll-jam{factors=4,4}' 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not ziggurat-opt %s -p 'unroll-jam{factors=4,40,2}' 2>&1 | filecheck %s --check-prefix=WIDTH
// RUN: not ziggurat-opt %s -p 'unroll-jam{factors=4,0,2}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not ziggurat-opt %s -p 'unroll-jam{factors=1,16,1 kernel=nope}' 2>&1 | filecheck %s --check-prefix=NOPE
// RUN: not ziggurat-opt %s -p 'unroll-jam{factors=4,16,1099511627776}' 2>&1 | filecheck %s --check-prefix=HUGE
// RUN: not ziggurat-opt %s -p 'unroll-jam{factors=64,64,64}' 2>&1 | filecheck %s --check-prefix=BIG
// RUN: ziggurat-opt %s -p 'unroll-jam{factors=100,96,1}' | filecheck %s --check-prefix=CLAMP
// `unroll-jam` only rewrites the register tile (unroll factors) of the schedule; for the vector
// loop the factor counts elements and must be a multiple of the width.
// CHECK-LABEL: func.func @matmul
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [4, 48, 2], vector = 1, width = 16>
// CHECK-LABEL: func.func @other
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [4, 48, 2], vector = 1, width = 16>

// kernel=NAME targets one function; the others keep their schedule.
// ONE-LABEL: func.func @matmul
// ONE:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [2, 16, 4], vector = 1, width = 16>
// ONE-LABEL: func.func @other
// ONE:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>

// COUNT: error: unroll-jam: expected 3 unroll factors (one per loop), got 2
// WIDTH: error: unroll-jam: option 'factors': 40 (loop 1, the vector loop: it counts elements) is not a multiple of the vector width 16
// ZERO:  error: unroll-jam: option 'factors': 0 (loop 1) is out of range; allowed: 1..2147483647 (a factor past the loop's extent is cut to it)
// HUGE:  error: unroll-jam: option 'factors': 1099511627776 (loop 2) is out of range; allowed: 1..2147483647
// BIG:   error: unroll-jam: the register tile (unroll [64, 64, 64], vector loop 1, width 16) holds 16384 copies of the body; at most 4096 (it is generated unrolled)

// Factors past a loop's extent are cut to it (i and j have 64 iterations; j counts elements).
// CLAMP-LABEL: func.func @matmul
// CLAMP:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [64, 64, 1], vector = 1, width = 16>
// NOPE:  error: unroll-jam: no kernel named 'nope'

#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>

func.func @matmul(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %c: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%c : memref<64x64xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}

func.func @other(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %c: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%c : memref<64x64xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}
