// RUN: ziggurat-opt %s -p 'interchange{order=1,0,2}' | filecheck %s
// RUN: ziggurat-opt %s -p 'interchange{order=2,1,0 kernel=matmul}' | filecheck %s --check-prefix=ONE
// RUN: not ziggurat-opt %s -p 'interchange{order=1,0}' 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not ziggurat-opt %s -p 'interchange{order=0,0,1}' 2>&1 | filecheck %s --check-prefix=PERM
// RUN: not ziggurat-opt %s -p 'interchange{order=0,1,2 kernel=nope}' 2>&1 | filecheck %s --check-prefix=NOPE
// RUN: not ziggurat-opt %s -p 'interchange{order=0,1,5}' 2>&1 | filecheck %s --check-prefix=OUT
// `interchange` only rewrites the loop order of the schedule; the other fields are kept.
// CHECK-LABEL: func.func @matmul
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [1, 0, 2], unroll = [8, 32, 1], vector = 1, width = 16>
// CHECK-LABEL: func.func @other
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [1, 0, 2], unroll = [8, 32, 1], vector = 1, width = 16>

// kernel=NAME targets one function; the others keep their schedule.
// ONE-LABEL: func.func @matmul
// ONE:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [2, 1, 0], unroll = [8, 32, 1], vector = 1, width = 16>
// ONE-LABEL: func.func @other
// ONE:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>

// COUNT: error: interchange: expected 3 loop positions (one per loop), got 2
// PERM:  error: interchange: option 'order': 0,0,1 is not a permutation of the kernel's 3 loops (each of 0..2 once, outermost first)
// OUT:   error: interchange: option 'order': 0,1,5 is not a permutation of the kernel's 3 loops
// NOPE:  error: interchange: no kernel named 'nope'

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
