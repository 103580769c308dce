// RUN: ziggurat-opt %s -p 'vectorize{dim=0 width=8}' | filecheck %s
// RUN: ziggurat-opt %s -p 'vectorize{dim=1 width=8 kernel=other}' | filecheck %s --check-prefix=ONE
// RUN: ziggurat-opt %s -p 'vectorize{dim=-1}' | filecheck %s --check-prefix=SCALAR
// RUN: ziggurat-opt %s -p 'vectorize{dim=2 width=8}' | filecheck %s --check-prefix=RED
// RUN: not ziggurat-opt %s -p 'vectorize{dim=3 width=8}' 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not ziggurat-opt %s -p 'vectorize{dim=0 width=8 kernel=nope}' 2>&1 | filecheck %s --check-prefix=NOPE
// RUN: not ziggurat-opt %s -p 'vectorize{dim=-2}' 2>&1 | filecheck %s --check-prefix=NEGDIM
// RUN: not ziggurat-opt %s -p 'vectorize{dim=0 width=-4}' 2>&1 | filecheck %s --check-prefix=WIDTH
// RUN: not ziggurat-opt %s -p 'vectorize{dim=0 width=1099511627776}' 2>&1 | filecheck %s --check-prefix=WIDTH
// `vectorize` sets the vector loop and width, and rounds that loop's register tile up to a
// multiple of the width (at least one vector).
// CHECK-LABEL: func.func @matmul
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 2, 1], vector = 0, width = 8>
// CHECK-LABEL: func.func @other
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 2, 1], vector = 0, width = 8>

// kernel=NAME targets one function; the others keep their schedule.
// ONE-LABEL: func.func @matmul
// ONE:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>
// ONE-LABEL: func.func @other
// ONE:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 8>

// dim=-1: scalar code (width 1), register tile kept.
// SCALAR-LABEL: func.func @matmul
// SCALAR:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = -1, width = 1>

// The reduction loop k as lanes: each output keeps vector partial sums along it (an add
// reassociates), folded after the loop; j's register tile goes back to counting iterations.
// RED-LABEL: func.func @matmul
// RED:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 2, 8], vector = 2, width = 8>
// RANGE: error: vectorize: option 'dim': loop 3 does not exist; allowed: -1..2 (-1: scalar code; the kernel has 3 loops)
// NEGDIM: error: vectorize: option 'dim': -2 is out of range; allowed: -1 (scalar code) or a loop of the kernel
// WIDTH: error: vectorize: option 'width': {{-4|1099511627776}} is out of range; allowed: 1..64 (omit it for the host CPU's widest)
// NOPE:  error: vectorize: no kernel named 'nope'

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
