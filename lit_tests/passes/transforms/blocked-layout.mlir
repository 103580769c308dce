// RUN: ziggurat-opt %s --split-input-file -p 'blocked-layout{block=8}' | filecheck %s
// RUN: ziggurat-opt %s --split-input-file -p 'blocked-layout{block=16}' | filecheck %s --check-prefix=B16

// A conv chain in NCHW[b]c: transforms only at the edges. The block follows the channel count
// (3 -> 3c, 16 -> 8c, 32 -> 8c); per-channel constants are stored blocked; the elementwise
// ops, the residual add and the global pool run blocked; the pool's result goes back to NCHW
// for the flatten.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:  %[[W0:.*]] = graph.constant dense<5.000000e-01> : tensor<2x1x3x3x3x8xf32>
// CHECK-NEXT:  %[[X:.*]] = graph.layout_transform %x {src = "NCHW", dst = "NCHW3c"} : (tensor<1x3x8x8xf32>) -> tensor<1x1x8x8x3xf32>
// CHECK-NEXT:  %[[C0:.*]] = graph.conv_nchwc %[[X]], %[[W0]] {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x8x8x3xf32>, tensor<2x1x3x3x3x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:  %[[B:.*]] = graph.constant dense<1.000000e+00> : tensor<1x2x1x1x8xf32>
// CHECK-NEXT:  %[[A:.*]] = graph.add %[[C0]], %[[B]] : (tensor<1x2x8x8x8xf32>, tensor<1x2x1x1x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:  %[[R:.*]] = graph.relu %[[A]] : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:  %[[WD:.*]] = graph.constant dense<2.500000e-01> : tensor<2x1x3x3x1x8xf32>
// CHECK-NEXT:  %[[D:.*]] = graph.conv_nchwc %[[R]], %[[WD]] {pads = array<i64: 1, 1, 1, 1>, group = 16 : i64} : (tensor<1x2x8x8x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:  %[[S:.*]] = graph.add %[[D]], %[[R]] : (tensor<1x2x8x8x8xf32>, tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:  %[[W1:.*]] = graph.constant dense<1.250000e-01> : tensor<4x2x1x1x8x8xf32>
// CHECK-NEXT:  %[[C1:.*]] = graph.conv_nchwc %[[S]], %[[W1]] : (tensor<1x2x8x8x8xf32>, tensor<4x2x1x1x8x8xf32>) -> tensor<1x4x8x8x8xf32>
// CHECK-NEXT:  %[[P:.*]] = graph.reduce_mean %[[C1]] {axes = array<i64: 2, 3>} : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x1x1x8xf32>
// CHECK-NEXT:  %[[PN:.*]] = graph.layout_transform %[[P]] {src = "NCHW8c", dst = "NCHW"} : (tensor<1x4x1x1x8xf32>) -> tensor<1x32x1x1xf32>
// CHECK-NEXT:  %[[F:.*]] = graph.flatten %[[PN]]
// CHECK-NEXT:  func.return %[[F]]
func.func @chain(%x: tensor<1x3x8x8xf32>) -> tensor<1x32xf32> {
  %w0 = graph.constant dense<0.5> : tensor<16x3x3x3xf32>
  %c0 = graph.conv %x, %w0 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %b = graph.constant dense<1.0> : tensor<16x1x1xf32>
  %a = graph.add %c0, %b : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %r = graph.relu %a : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %wd = graph.constant dense<0.25> : tensor<16x1x3x3xf32>
  %d = graph.conv %r, %wd {group = 16 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32>
  %s = graph.add %d, %r : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %w1 = graph.constant dense<0.125> : tensor<32x16x1x1xf32>
  %c1 = graph.conv %s, %w1 : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %p = graph.global_avg_pool %c1 : (tensor<1x32x8x8xf32>) -> tensor<1x32x1x1xf32>
  %f = graph.flatten %p {axis = 1 : i64} : (tensor<1x32x1x1xf32>) -> tensor<1x32xf32>
  func.return %f : tensor<1x32xf32>
}

// -----

// Squeeze-and-excitation on a conv's result: the pool, the pooled branch's conv and the scale
// run blocked; a 4-D operand that is no transform (the argument %y) gets one of its own.
// CHECK-LABEL: func.func @squeeze_excite
// CHECK:       %[[H:.*]] = graph.conv_nchwc
// CHECK-NEXT:  %[[P:.*]] = graph.reduce_mean %[[H]] {axes = array<i64: 2, 3>} : (tensor<1x2x4x4x8xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK:       %[[C:.*]] = graph.conv_nchwc %[[P]], %{{.*}} : (tensor<1x2x1x1x8xf32>, tensor<2x2x1x1x8x8xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK-NEXT:  %[[G:.*]] = graph.sigmoid %[[C]] : (tensor<1x2x1x1x8xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK-NEXT:  %[[M:.*]] = graph.mul %[[H]], %[[G]] : (tensor<1x2x4x4x8xf32>, tensor<1x2x1x1x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK-NEXT:  %[[Y:.*]] = graph.layout_transform %y {src = "NCHW", dst = "NCHW8c"}
// CHECK-NEXT:  %[[O:.*]] = graph.add %[[M]], %[[Y]]
// CHECK-NEXT:  %[[ON:.*]] = graph.layout_transform %[[O]] {src = "NCHW8c", dst = "NCHW"} : (tensor<1x2x4x4x8xf32>) -> tensor<1x16x4x4xf32>
// CHECK-NEXT:  func.return %[[ON]]
func.func @squeeze_excite(%x: tensor<1x16x4x4xf32>, %y: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16x1x1xf32>
  %h = graph.conv %x, %w : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %p = graph.global_avg_pool %h : (tensor<1x16x4x4xf32>) -> tensor<1x16x1x1xf32>
  %c = graph.conv %p, %w : (tensor<1x16x1x1xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x1x1xf32>
  %g = graph.sigmoid %c : (tensor<1x16x1x1xf32>) -> tensor<1x16x1x1xf32>
  %m = graph.mul %h, %g : (tensor<1x16x4x4xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %o = graph.add %m, %y : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  func.return %o : tensor<1x16x4x4xf32>
}

// -----

// Concatenated blocked tensors stay blocked, and so does a pool: its window gets a size-1 dim
// for the block. With block 16, the 24-channel halves are 8c and their 48-channel
// concatenation is converted from 8c to 16c for the conv that reads it, in one transform.
// CHECK-LABEL: func.func @concat_pool
// CHECK:       %[[X:.*]] = graph.layout_transform %x {src = "NCHW", dst = "NCHW8c"}
// CHECK-NOT:   graph.layout_transform %x
// CHECK:       %[[A:.*]] = graph.conv_nchwc %[[X]]
// CHECK:       %[[B:.*]] = graph.conv_nchwc %[[X]]
// CHECK-NEXT:  %[[C:.*]] = graph.concat %[[A]], %[[B]] {axis = 1 : i64} : (tensor<1x3x4x4x8xf32>, tensor<1x3x4x4x8xf32>) -> tensor<1x6x4x4x8xf32>
// CHECK-NEXT:  %[[M:.*]] = graph.max_pool %[[C]] {kernel = array<i64: 2, 2, 1>, strides = array<i64: 2, 2, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>} : (tensor<1x6x4x4x8xf32>) -> tensor<1x6x2x2x8xf32>
// CHECK-NEXT:  %[[MN:.*]] = graph.layout_transform %[[M]] {src = "NCHW8c", dst = "NCHW"}
// CHECK:       func.return %[[MN]]
// B16-LABEL:   func.func @concat_pool
// B16:         %[[C:.*]] = graph.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x3x4x4x8xf32>, tensor<1x3x4x4x8xf32>) -> tensor<1x6x4x4x8xf32>
// B16:         %[[C16:.*]] = graph.layout_transform %[[C]] {src = "NCHW8c", dst = "NCHW16c"} : (tensor<1x6x4x4x8xf32>) -> tensor<1x3x4x4x16xf32>
// B16-NEXT:    graph.conv_nchwc %[[C16]]
func.func @concat_pool(%x: tensor<1x8x4x4xf32>) -> (tensor<1x48x2x2xf32>, tensor<1x16x4x4xf32>) {
  %w = graph.constant dense<0.5> : tensor<24x8x1x1xf32>
  %a = graph.conv %x, %w : (tensor<1x8x4x4xf32>, tensor<24x8x1x1xf32>) -> tensor<1x24x4x4xf32>
  %b = graph.conv %x, %w : (tensor<1x8x4x4xf32>, tensor<24x8x1x1xf32>) -> tensor<1x24x4x4xf32>
  %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x24x4x4xf32>, tensor<1x24x4x4xf32>) -> tensor<1x48x4x4xf32>
  %m = graph.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x48x4x4xf32>) -> tensor<1x48x2x2xf32>
  %w2 = graph.constant dense<0.5> : tensor<16x48x1x1xf32>
  %e = graph.conv %c, %w2 : (tensor<1x48x4x4xf32>, tensor<16x48x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %m, %e : tensor<1x48x2x2xf32>, tensor<1x16x4x4xf32>
}

// -----

// Left in NCHW: a grouped (not depthwise) conv, a channel count with no block (10 with block 8:
// no factor 4, more than 8), and a conv with weights computed at run time.
// CHECK-LABEL: func.func @unblocked
// CHECK-NOT:   graph.layout_transform
// CHECK:       graph.conv %x, %{{.*}} {group = 2 : i64}
// CHECK:       graph.conv %{{.*}}, %{{.*}} : (tensor<1x10x4x4xf32>
// CHECK:       graph.conv %x, %w
// CHECK-NOT:   graph.layout_transform
func.func @unblocked(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>) -> (tensor<1x10x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %wg = graph.constant dense<0.5> : tensor<10x4x1x1xf32>
  %g = graph.conv %x, %wg {group = 2 : i64} : (tensor<1x8x4x4xf32>, tensor<10x4x1x1xf32>) -> tensor<1x10x4x4xf32>
  %w10 = graph.constant dense<0.5> : tensor<8x10x1x1xf32>
  %t = graph.conv %g, %w10 : (tensor<1x10x4x4xf32>, tensor<8x10x1x1xf32>) -> tensor<1x8x4x4xf32>
  %r = graph.conv %x, %w : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  func.return %g, %t, %r : tensor<1x10x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}
