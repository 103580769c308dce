// RUN: ziggurat-opt %s --split-input-file -p outline-kernels | filecheck %s

// Views inside a fusion group that @main still reads after the kernel stay in @main, together
// with the views they stand on (Relu -> Unsqueeze -> Squeeze -> Relu, bufferized: the second
// Relu runs in place on the squeezed view, which is then copied to the output).

// CHECK:      func.func private @kernel_0(%0: memref<1x4xf32>, %1: memref<1x4xf32>) {
// CHECK:        memref.expand_shape %1
// CHECK:        memref.collapse_shape
// CHECK:      func.func @main(%x: memref<1x4xf32>, %y: memref<1x4xf32>) {
// CHECK:        func.call @kernel_0(%x, %[[T:[a-z0-9_]+]])
// CHECK-NEXT:   %[[E:[a-z0-9_]+]] = memref.expand_shape %[[T]]
// CHECK-NEXT:   %[[C:[a-z0-9_]+]] = memref.collapse_shape %[[E]]
// CHECK-NEXT:   func.call @kernel_1(%[[C]], %y)

func.func @main(%x: memref<1x4xf32>, %y: memref<1x4xf32>) {
  %arena = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<1x4xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<1x4xf32>) outs(%t : memref<1x4xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %in, %z : f32
    linalg.yield %r : f32
  }
  %e = memref.expand_shape %t [[0], [1, 2]] output_shape [1, 1, 4] : memref<1x4xf32> into memref<1x1x4xf32>
  %c = memref.collapse_shape %e [[0], [1, 2]] : memref<1x1x4xf32> into memref<1x4xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : memref<1x4xf32>) outs(%c : memref<1x4xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %in, %z : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : memref<1x4xf32>) outs(%y : memref<1x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  memref.dealloc %arena : memref<64xi8>
  func.return
}

// -----

// A buffer read after the kernel through a view is not private to the kernel (nothing may skip
// writing it), even when that view sits between the ops of the group.

// CHECK:      func.func private @kernel_0(%0: memref<4x16xf32>, %1: memref<4x8xf32>, %2: memref<8x16xf32>, %3: memref<4x16xf32>) {
// CHECK:      func.func @main(
// CHECK:        func.call @kernel_0(%[[T:[a-z0-9_]+]],
// CHECK-NEXT:   %[[V:[a-z0-9_]+]] = memref.collapse_shape %[[T]]
// CHECK-NEXT:   func.call @kernel_1(%[[V]], %z)

func.func @main(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %y: memref<4x16xf32>, %z: memref<64xf32>) {
  %arena = memref.alloc() {alignment = 64 : i64} : memref<256xi8>
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<256xi8> to memref<4x16xf32>
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill {ziggurat.group = 0 : i64} ins(%zero : f32) outs(%t : memref<4x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%t : memref<4x16xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %p = arith.mulf %x, %w : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %v = memref.collapse_shape %t [[0, 1]] : memref<4x16xf32> into memref<64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%t : memref<4x16xf32>) outs(%y : memref<4x16xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%in: f32, %out: f32):
    %c = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %in, %c : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%v : memref<64xf32>) outs(%z : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  memref.dealloc %arena : memref<256xi8>
  func.return
}
