// RUN: ziggurat-opt %s -p 'tile{sizes=0,32,64}' | filecheck %s
// RUN: ziggurat-opt %s -p 'tile{sizes=16,0,32 kernel=other}' | filecheck %s --check-prefix=ONE
// RUN: not ziggurat-opt %s -p 'tile{sizes=4,4}' 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not ziggurat-opt %s -p 'tile{sizes=0,-1,0}' 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not ziggurat-opt %s -p 'tile{sizes=0,0,0 kernel=nope}' 2>&1 | filecheck %s --check-prefix=NOPE
// RUN: not ziggurat-opt %s -p 'tile{sizes=0,0,1099511627776}' 2>&1 | filecheck %s --check-prefix=HUGE
// RUN: ziggurat-opt %s -p 'tile{sizes=0,1000,64}' | filecheck %s --check-prefix=CLAMP
// RUN: not ziggurat-opt %s -p 'tile{sizes=0,0,0 op=1}' 2>&1 | filecheck %s --check-prefix=OP
// RUN: not ziggurat-opt %s -p 'tile{sizes=0,0,0 op=-2}' 2>&1 | filecheck %s --check-prefix=OPNEG
// `tile` only rewrites the tile sizes of the schedule; the other fields are kept.
// CHECK-LABEL: func.func @matmul
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 32, 64], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>
// CHECK-LABEL: func.func @other
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 32, 64], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>

// kernel=NAME targets one function; the others keep their schedule.
// ONE-LABEL: func.func @matmul
// ONE:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>
// ONE-LABEL: func.func @other
// ONE:       sched.schedule = #sched.schedule<tile = [16, 0, 32], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>

// COUNT: error: tile: expected 3 tile sizes (one per loop), got 2
// NEG:   error: tile: option 'sizes': -1 (loop 1) is out of range; allowed: 0..2147483647 (0: untiled; a size past the loop's extent is cut to it)
// NOPE:  error: tile: no kernel named 'nope'
// HUGE:  error: tile: option 'sizes': 1099511627776 (loop 2) is out of range; allowed: 0..2147483647
// OP:    error: tile: option 'op': 1 is out of range; allowed: -1..0 (@matmul has 1 linalg.generic op)
// OPNEG: error: tile: option 'op': -2 is out of range; allowed: -1 (every linalg.generic of a function) or the index of one

// A size past its loop's extent (j has 64 iterations) is cut to the extent: the loop stays untiled.
// CLAMP-LABEL: func.func @matmul
// CLAMP:       sched.schedule = #sched.schedule<tile = [0, 64, 64], order = [0, 1, 2]

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
