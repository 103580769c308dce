// RUN: ziggurat-opt %s --split-input-file -p fuse-ops | filecheck %s
// RUN: ziggurat-opt %s --split-input-file -p 'fuse-ops{max_group_size=2}' | filecheck %s --check-prefix=SMALL

// conv + bias add + residual add + relu: one out_fusable kernel; the weights are sunk.
// CHECK-LABEL: func.func @conv_epilogue
// CHECK-NOT: graph.constant
// CHECK: %[[F:.*]] = graph.fused "conv+add+add+relu" out_fusable (%{{.*}}, %{{.*}}) : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: tensor<1x4x8x8xf32>, %[[Y:.*]]: tensor<1x4x8x8xf32>):
// CHECK-NEXT: %[[W:.*]] = graph.constant dense<5.000000e-01> : tensor<4x4x3x3xf32>
// CHECK-NEXT: %[[B:.*]] = graph.constant dense<1.000000e+00> : tensor<4x1x1xf32>
// CHECK-NEXT: %[[C:.*]] = graph.conv %[[X]], %[[W]]
// CHECK-NEXT: %[[A:.*]] = graph.add %[[C]], %[[B]]
// CHECK-NEXT: %[[R:.*]] = graph.add %[[A]], %[[Y]]
// CHECK-NEXT: %[[O:.*]] = graph.relu %[[R]]
// CHECK-NEXT: graph.yield %[[O]] : tensor<1x4x8x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[F]]
// SMALL-LABEL: func.func @conv_epilogue
// SMALL: graph.fused "conv+add" out_fusable
// SMALL: graph.fused "add+relu" broadcast
func.func @conv_epilogue(%x: tensor<1x4x8x8xf32>, %y: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %b = graph.constant dense<1.0> : tensor<4x1x1xf32>
  %c = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a = graph.add %c, %b : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = graph.add %a, %y : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o = graph.relu %r : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %o : tensor<1x4x8x8xf32>
}

// -----

// A conv feeding two convs keeps no epilogue; the join goes to the first consumer.
// CHECK-LABEL: func.func @conv_two_consumers
// CHECK-NOT: graph.constant
// CHECK: %[[C0:.*]] = graph.fused "conv" out_fusable (%{{.*}})
// CHECK: %[[C2:.*]] = graph.fused "conv" out_fusable (%[[C0]])
// CHECK: graph.fused "conv+add" out_fusable (%[[C0]], %[[C2]])
// CHECK: func.return
func.func @conv_two_consumers(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %c0 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %c1 = graph.conv %c0, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %c2 = graph.conv %c0, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %s = graph.add %c1, %c2 : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %s : tensor<1x4x8x8xf32>
}

// -----

// An elementwise value also returned may only be a group's exit; the constant still used
// outside the group stays.
// CHECK-LABEL: func.func @outside_user
// CHECK: %[[K:.*]] = graph.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK: %[[F:.*]] = graph.fused "matmul+relu" out_fusable (%{{.*}}) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[N:.*]] = graph.mul %[[F]], %[[K]]
// CHECK-NEXT: func.return %[[N]], %[[F]]
func.func @outside_user(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %k = graph.constant dense<2.0> : tensor<4xf32>
  %m = graph.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = graph.relu %m : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %n = graph.mul %r, %k : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  func.return %n, %r : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Nothing fuses across softmax; single light ops stay as they are.
// CHECK-LABEL: func.func @opaque
// CHECK: %[[M:.*]] = graph.fused "matmul+mul" out_fusable
// CHECK-NEXT: ^
// CHECK-NEXT: graph.constant
// CHECK-NEXT: graph.matmul
// CHECK-NEXT: graph.mul
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[S:.*]] = graph.softmax %[[M]]
// CHECK-NEXT: %[[T:.*]] = graph.tanh %[[S]]
// CHECK-NEXT: func.return %[[T]]
func.func @opaque(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %k = graph.constant dense<0.25> : tensor<f32>
  %m = graph.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = graph.mul %m, %k : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %p = graph.softmax %s {axis = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = graph.tanh %p : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %t : tensor<4x4xf32>
}

// -----

// A diamond fuses whole when both branches end in the join; not when a branch leaves.
// CHECK-LABEL: func.func @diamond
// CHECK: graph.fused "exp+neg+sigmoid+mul+reshape" injective
// CHECK-NOT: graph.fused
// CHECK: func.return
func.func @diamond(%x: tensor<4x4xf32>) -> tensor<16xf32> {
  %e = graph.exp %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = graph.neg %e : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = graph.sigmoid %e : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = graph.mul %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = graph.reshape %m : (tensor<4x4xf32>) -> tensor<16xf32>
  func.return %r : tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @diamond_leak
// CHECK: %[[E:.*]] = graph.exp
// CHECK: %[[A:.*]] = graph.neg %[[E]]
// CHECK: %[[F:.*]] = graph.fused "sigmoid+mul" broadcast (%[[E]], %[[A]])
// CHECK: func.return %[[F]], %[[A]]
func.func @diamond_leak(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %e = graph.exp %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = graph.neg %e : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = graph.sigmoid %e : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = graph.mul %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %m, %a : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// pad feeding only a conv is its prologue; a reduction takes its elementwise prologue.
// CHECK-LABEL: func.func @prologues
// CHECK: graph.fused "pad+conv+relu" out_fusable (%{{.*}}) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK: graph.fused "global_avg_pool" reduction
// CHECK: graph.fused "sqrt+reduce_mean" reduction
func.func @prologues(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) {
  %w = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %p = graph.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x10x10xf32>
  %c = graph.conv %p, %w : (tensor<1x4x10x10xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %r = graph.relu %c : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %g = graph.global_avg_pool %r : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  %q = graph.sqrt %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %m = graph.reduce_mean %q {axes = array<i64: 2, 3>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  func.return %g, %m : tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>
}
