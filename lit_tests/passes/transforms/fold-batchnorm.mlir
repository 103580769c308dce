// RUN: ziggurat-opt %s -p fold-batchnorm | filecheck %s

// s = scale / sqrt(var + eps) = [2, 0.5] (eps = 0), t = beta - mean * s = [1 - 2, 0 - 0.5].
// conv: w' = w * s, b' = b * s + t.
// CHECK-LABEL: func.func @conv
// CHECK-NOT:     graph.batch_norm
// CHECK:         %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}1.500000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %{{.*}} = graph.conv %x, %[[W]], %[[B]] : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return
func.func @conv(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %b = graph.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %scale = graph.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %beta = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %var = graph.constant dense<[4.0, 4.0]> : tensor<2xf32>
  %y = graph.conv %x, %w, %b : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %z = graph.batch_norm %y, %scale, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %z : tensor<1x2x2x2xf32>
}

// gemm with trans_b: the weight's rows are the output channels.
// CHECK-LABEL: func.func @gemm
// CHECK:         %[[W:.*]] = graph.constant dense<{{\[}}[2.000000e+00, 4.000000e+00], [1.500000e+00, 2.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<[-1.000000e+00, -5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %{{.*}} = graph.gemm %x, %[[W]], %[[C]] {trans_b = 1 : i64}
// CHECK-NOT:     graph.batch_norm
func.func @gemm(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %scale = graph.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %beta = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %var = graph.constant dense<[4.0, 4.0]> : tensor<2xf32>
  %y = graph.gemm %x, %w {trans_b = 1 : i64} : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %z = graph.batch_norm %y, %scale, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %z : tensor<3x2xf32>
}

// matmul: columns scaled, the shift is a graph.add.
// CHECK-LABEL: func.func @matmul
// CHECK:         %[[W:.*]] = graph.constant dense<{{\[}}[2.000000e+00, 1.000000e+00], [6.000000e+00, 2.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %x, %[[W]]
// CHECK-NEXT:    %[[T:.*]] = graph.constant dense<[-1.000000e+00, -5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %{{.*}} = graph.add %[[M]], %[[T]]
func.func @matmul(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %scale = graph.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %beta = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %var = graph.constant dense<[4.0, 4.0]> : tensor<2xf32>
  %y = graph.matmul %x, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %z = graph.batch_norm %y, %scale, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %z : tensor<3x2xf32>
}

// The conv has a second user: it stays, and the batch_norm becomes x * s + t with (C, 1, 1) constants.
// CHECK-LABEL: func.func @shared
// CHECK:         %[[Y:.*]] = graph.conv
// CHECK:         %[[S:.*]] = graph.constant dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}5.000000e-01]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.constant dense<{{\[\[\[}}-1.000000e+00]], {{\[\[}}-5.000000e-01]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.mul %[[Y]], %[[S]]
// CHECK-NEXT:    %{{.*}} = graph.add %[[M]], %[[T]]
// CHECK-NOT:     graph.batch_norm
func.func @shared(%x: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = graph.constant dense<[[[[1.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %scale = graph.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %beta = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %var = graph.constant dense<[4.0, 4.0]> : tensor<2xf32>
  %y = graph.conv %x, %w : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %z = graph.batch_norm %y, %scale, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %y, %z : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// Non-constant weights: the batch_norm becomes a scale and shift, the conv stays as it is.
// CHECK-LABEL: func.func @dynamic_weight
// CHECK:         graph.conv %x, %w
// CHECK:         graph.mul
// CHECK:         graph.add
func.func @dynamic_weight(%x: tensor<1x1x2x2xf32>, %w: tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32> {
  %scale = graph.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %beta = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %var = graph.constant dense<[4.0, 4.0]> : tensor<2xf32>
  %y = graph.conv %x, %w : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %z = graph.batch_norm %y, %scale, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %z : tensor<1x2x2x2xf32>
}
