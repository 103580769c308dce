// RUN: ziggurat-opt %s | filecheck %s
// RUN: ziggurat-opt %s | ziggurat-opt | filecheck %s
// #sched.schedule prints in its canonical form and survives a print/parse round trip.

#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>

// CHECK-LABEL: func.func @matmul
// CHECK:       linalg.generic
// CHECK-SAME:  sched.schedule = #sched.schedule<tile = [0, 256, 64], order = [1, 0, 2], unroll = [4, 32, 2], vector = 1, width = 16>
func.func @matmul(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %c: memref<8x32xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [0, 256, 64], order = [1, 0, 2], unroll = [4, 32, 2], vector = 1, width = 16>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}

// A scalar schedule (vector = -1), written with irregular spacing.
// CHECK-LABEL: func.func @scalar
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 1], vector = -1, width = 1>
func.func @scalar(%x: memref<4x4xf32>, %y: memref<4x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x4xf32>) outs(%y : memref<4x4xf32>)
      attrs = {sched.schedule = #sched.schedule< tile=[0,0] , order=[0,1], unroll=[1,1], vector=-1, width=1 >} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  func.return
}

// The attribute is an ordinary attribute value: it can also stand alone.
// CHECK-LABEL: func.func @standalone
// CHECK-SAME:  sched = #sched.schedule<tile = [8], order = [0], unroll = [16], vector = 0, width = 8>
func.func @standalone() attributes {sched = #sched.schedule<tile = [8], order = [0], unroll = [16], vector = 0, width = 8>} {
  func.return
}
