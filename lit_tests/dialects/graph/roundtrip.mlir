// RUN: ziggurat-opt %s | ziggurat-opt | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: {ziggurat.name = "input"}
// CHECK-SAME: {ziggurat.name = "output"}
func.func @main(%x: tensor<1x3x8x8xf32> {ziggurat.name = "input"}) -> (tensor<1x4x4x4xf32> {ziggurat.name = "output"}) {
  // CHECK: graph.constant dense<1.000000e+00> : tensor<4x3x3x3xf32>
  %w = graph.constant dense<1.0> : tensor<4x3x3x3xf32>
  // CHECK: graph.constant dense<[1, -1]> : tensor<2xi64>
  %idx = graph.constant dense<[1, -1]> : tensor<2xi64>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  // CHECK: graph.conv %{{.*}}, %{{.*}}, %{{.*}} {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %c = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.conv %{{.*}}, %{{.*}} {group = 3 : i64} : (tensor<1x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x6x6xf32>
  %dw = graph.constant dense<0.5> : tensor<3x1x3x3xf32>
  %c2 = graph.conv %x, %dw {group = 3 : i64} : (tensor<1x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x6x6xf32>
  // CHECK: graph.add %{{.*}}, %{{.*}} : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %r4 = graph.reshape %b : (tensor<4xf32>) -> tensor<4x1x1xf32>
  %a0 = graph.add %c, %r4 : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.sub
  %a1 = graph.sub %a0, %a0 : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.mul
  %a2 = graph.mul %a1, %a0 : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.div
  %a3 = graph.div %a2, %a0 : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.pow
  %a4 = graph.pow %a3, %a0 : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.sqrt
  %u0 = graph.sqrt %a4 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.exp
  %u1 = graph.exp %u0 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.log
  %u2 = graph.log %u1 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.neg
  %u3 = graph.neg %u2 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.abs
  %u4 = graph.abs %u3 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.reciprocal
  %u5 = graph.reciprocal %u4 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.relu
  %u6 = graph.relu %u5 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.sigmoid
  %u7 = graph.sigmoid %u6 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.tanh
  %u8 = graph.tanh %u7 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.erf
  %u9 = graph.erf %u8 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.hard_swish
  %u10 = graph.hard_swish %u9 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.leaky_relu %{{.*}} {alpha = 2.000000e-01 : f32}
  %u11 = graph.leaky_relu %u10 {alpha = 0.2 : f32} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.hard_sigmoid %{{.*}} {alpha = 1.000000e-01 : f32}
  %u12 = graph.hard_sigmoid %u11 {alpha = 0.1 : f32} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.clip %{{.*}} {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32}
  %u13 = graph.clip %u12 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.gelu %{{.*}} {approximate = "tanh"}
  %u14 = graph.gelu %u13 {approximate = "tanh"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.identity
  %u15 = graph.identity %u14 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.dropout
  %u16 = graph.dropout %u15 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.cast %{{.*}} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %u17 = graph.cast %u16 : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.softmax %{{.*}} {axis = 1 : i64}
  %s0 = graph.softmax %u17 {axis = 1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.log_softmax %{{.*}} {axis = 3 : i64}
  %s1 = graph.log_softmax %s0 {axis = 3 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.batch_norm
  %bn = graph.batch_norm %s1, %b, %b, %b, %b {epsilon = 1.0e-03 : f32} : (tensor<1x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 3 : i64}
  %ln = graph.layer_norm %bn, %b, %b {axis = 3 : i64} : (tensor<1x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: graph.max_pool %{{.*}} {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x3x3xf32>
  %mp = graph.max_pool %ln {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x3x3xf32>
  // CHECK: graph.avg_pool %{{.*}} {kernel = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x3x3xf32>
  %ap = graph.avg_pool %ln {kernel = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x3x3xf32>
  // CHECK: graph.global_avg_pool %{{.*}} : (tensor<1x4x3x3xf32>) -> tensor<1x4x1x1xf32>
  %gap = graph.global_avg_pool %ap : (tensor<1x4x3x3xf32>) -> tensor<1x4x1x1xf32>
  // CHECK: graph.global_max_pool
  %gmp = graph.global_max_pool %mp : (tensor<1x4x3x3xf32>) -> tensor<1x4x1x1xf32>
  // CHECK: graph.flatten %{{.*}} : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  %fl = graph.flatten %gap : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1xf32>
  %mm = graph.matmul %fl, %b : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1xf32>
  // CHECK: graph.gemm %{{.*}}, %{{.*}}, %{{.*}} {beta = 5.000000e-01 : f32, trans_b = 1 : i64} : (tensor<1x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %gw = graph.constant dense<1.0> : tensor<3x4xf32>
  %gc = graph.constant dense<1.0> : tensor<3xf32>
  %gm = graph.gemm %fl, %gw, %gc {beta = 0.5 : f32, trans_b = 1 : i64} : (tensor<1x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  // CHECK: graph.squeeze %{{.*}} {axes = array<i64: 2, 3>} : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  %sq = graph.squeeze %gmp {axes = array<i64: 2, 3>} : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  // CHECK: graph.unsqueeze %{{.*}} {axes = array<i64: 0>} : (tensor<1x4xf32>) -> tensor<1x1x4xf32>
  %us = graph.unsqueeze %sq {axes = array<i64: 0>} : (tensor<1x4xf32>) -> tensor<1x1x4xf32>
  // CHECK: graph.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : (tensor<1x1x4xf32>) -> tensor<4x1x1xf32>
  %tr = graph.transpose %us {perm = array<i64: 2, 0, 1>} : (tensor<1x1x4xf32>) -> tensor<4x1x1xf32>
  // CHECK: graph.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x8xf32>
  %cc = graph.concat %sq, %fl {axis = 1 : i64} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x8xf32>
  // CHECK: graph.split %{{.*}} {axis = 1 : i64, sizes = array<i64: 3, 5>} : (tensor<1x8xf32>) -> (tensor<1x3xf32>, tensor<1x5xf32>)
  %sp:2 = graph.split %cc {axis = 1 : i64, sizes = array<i64: 3, 5>} : (tensor<1x8xf32>) -> (tensor<1x3xf32>, tensor<1x5xf32>)
  // CHECK: graph.slice %{{.*}} {starts = array<i64: 0, 7>, ends = array<i64: 1, -1>, steps = array<i64: 1, -2>} : (tensor<1x8xf32>) -> tensor<1x4xf32>
  %sl = graph.slice %cc {starts = array<i64: 0, 7>, ends = array<i64: 1, -1>, steps = array<i64: 1, -2>} : (tensor<1x8xf32>) -> tensor<1x4xf32>
  // CHECK: graph.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<1x2xf32>
  %ga = graph.gather %cc, %idx {axis = 1 : i64} : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<1x2xf32>
  // CHECK: graph.pad %{{.*}} {pads = array<i64: 0, 1, 0, -1>, value = 1.000000e+00 : f32} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %pd = graph.pad %cc {pads = array<i64: 0, 1, 0, -1>, value = 1.0 : f32} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  // CHECK: graph.reduce_mean %{{.*}} {axes = array<i64: 1>} : (tensor<1x8xf32>) -> tensor<1x1xf32>
  %rm = graph.reduce_mean %pd {axes = array<i64: 1>} : (tensor<1x8xf32>) -> tensor<1x1xf32>
  // CHECK: graph.reduce_sum %{{.*}} {keepdims = 0 : i64} : (tensor<1x8xf32>) -> tensor<f32>
  %rs = graph.reduce_sum %pd {keepdims = 0 : i64} : (tensor<1x8xf32>) -> tensor<f32>
  // CHECK: graph.reduce_max %{{.*}} {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<1x8xf32>) -> tensor<8xf32>
  %rx = graph.reduce_max %pd {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<1x8xf32>) -> tensor<8xf32>
  // CHECK: graph.shape %{{.*}} : (tensor<1x8xf32>) -> tensor<2xi64>
  %sh = graph.shape %pd : (tensor<1x8xf32>) -> tensor<2xi64>
  func.return %c : tensor<1x4x4x4xf32>
}

// CHECK-LABEL: func.func @fused
func.func @fused(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>) {
  // CHECK: %[[F:.*]] = graph.fused "add+add+relu" broadcast (%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NEXT: ^{{.*}}(%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>):
  // CHECK-NEXT: %[[C:.*]] = graph.constant dense<1.000000e+00> : tensor<3xf32>
  // CHECK-NEXT: %[[S:.*]] = graph.add %[[A]], %[[B]]
  // CHECK-NEXT: %[[T:.*]] = graph.add %[[S]], %[[C]]
  // CHECK-NEXT: %[[R:.*]] = graph.relu %[[T]]
  // CHECK-NEXT: graph.yield %[[R]] : tensor<2x3xf32>
  // CHECK-NEXT: }
  %0 = graph.fused "add+add+relu" broadcast (%x, %y) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>):
    %c = graph.constant dense<1.0> : tensor<3xf32>
    %1 = graph.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = graph.add %1, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %3 = graph.relu %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
    graph.yield %3 : tensor<2x3xf32>
  }
  // CHECK: %{{.*}}, %{{.*}} = graph.fused "split" injective (%[[F]]) : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>) attributes {note = "x"} {
  // CHECK: graph.yield %{{.*}}, %{{.*}} : tensor<2x1xf32>, tensor<2x2xf32>
  %4:2 = graph.fused "split" injective (%0) : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>) attributes {note = "x"} {
  ^bb0(%a: tensor<2x3xf32>):
    %s:2 = graph.split %a {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
    graph.yield %s#0, %s#1 : tensor<2x1xf32>, tensor<2x2xf32>
  }
  // CHECK: graph.fused "const" elementwise () : () -> tensor<2x3xf32> {
  %5 = graph.fused "const" elementwise () : () -> tensor<2x3xf32> {
  ^bb0:
    %k = graph.constant dense<2.0> : tensor<2x3xf32>
    graph.yield %k : tensor<2x3xf32>
  }
  func.return %0, %4#0 : tensor<2x3xf32>, tensor<2x1xf32>
}

// CHECK-LABEL: func.func @blocked
// CHECK: graph.layout_transform %{{.*}} {src = "NCHW", dst = "NCHW8c"} : (tensor<1x16x6x6xf32>) -> tensor<1x2x6x6x8xf32>
// CHECK: graph.conv_nchwc %{{.*}}, %{{.*}}, %{{.*}} {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6x8xf32>, tensor<4x2x3x3x8x4xf32>, tensor<16xf32>) -> tensor<1x4x6x6x4xf32>
// CHECK: graph.conv_nchwc %{{.*}}, %{{.*}} {strides = array<i64: 2, 2>, group = 16 : i64} : (tensor<1x4x6x6x4xf32>, tensor<4x1x1x1x1x4xf32>) -> tensor<1x4x3x3x4xf32>
// CHECK: graph.layout_transform %{{.*}} {src = "NCHW4c", dst = "NCHW"} : (tensor<1x4x3x3x4xf32>) -> tensor<1x16x3x3xf32>
func.func @blocked(%x: tensor<1x16x6x6xf32>, %w: tensor<4x2x3x3x8x4xf32>, %b: tensor<16xf32>, %d: tensor<4x1x1x1x1x4xf32>) -> tensor<1x16x3x3xf32> {
  %xb = graph.layout_transform %x {src = "NCHW", dst = "NCHW8c"} : (tensor<1x16x6x6xf32>) -> tensor<1x2x6x6x8xf32>
  %c = graph.conv_nchwc %xb, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6x8xf32>, tensor<4x2x3x3x8x4xf32>, tensor<16xf32>) -> tensor<1x4x6x6x4xf32>
  %e = graph.conv_nchwc %c, %d {strides = array<i64: 2, 2>, group = 16 : i64} : (tensor<1x4x6x6x4xf32>, tensor<4x1x1x1x1x4xf32>) -> tensor<1x4x3x3x4xf32>
  %y = graph.layout_transform %e {src = "NCHW4c", dst = "NCHW"} : (tensor<1x4x3x3x4xf32>) -> tensor<1x16x3x3xf32>
  func.return %y : tensor<1x16x3x3xf32>
}

// CHECK-LABEL: func.func @winograd
// CHECK: graph.winograd_input %{{.*}} {tile = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8x8xf32>) -> tensor<36x4x16xf32>
// CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<36x4x16xf32>, tensor<36x16x8xf32>) -> tensor<36x4x8xf32>
// CHECK: graph.winograd_output %{{.*}}, %{{.*}} {tile = 4 : i64, image = array<i64: 8, 8>, block = 8 : i64} : (tensor<36x4x8xf32>, tensor<8xf32>) -> tensor<1x1x8x8x8xf32>
// CHECK: graph.winograd_output %{{.*}} {tile = 2 : i64, image = array<i64: 4, 8>, block = 4 : i64} : (tensor<16x8x8xf32>) -> tensor<1x2x4x8x4xf32>
func.func @winograd(%x: tensor<1x2x8x8x8xf32>, %u: tensor<36x16x8xf32>, %b: tensor<8xf32>, %p: tensor<16x8x8xf32>) -> (tensor<1x1x8x8x8xf32>, tensor<1x2x4x8x4xf32>) {
  %v = graph.winograd_input %x {tile = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8x8xf32>) -> tensor<36x4x16xf32>
  %m = graph.matmul %v, %u : (tensor<36x4x16xf32>, tensor<36x16x8xf32>) -> tensor<36x4x8xf32>
  %y = graph.winograd_output %m, %b {tile = 4 : i64, image = array<i64: 8, 8>, block = 8 : i64} : (tensor<36x4x8xf32>, tensor<8xf32>) -> tensor<1x1x8x8x8xf32>
  %z = graph.winograd_output %p {tile = 2 : i64, image = array<i64: 4, 8>, block = 4 : i64} : (tensor<16x8x8xf32>) -> tensor<1x2x4x8x4xf32>
  func.return %y, %z : tensor<1x1x8x8x8xf32>, tensor<1x2x4x8x4xf32>
}
