// RUN: ziggurat-opt %s -p fold-constants | filecheck %s
// RUN: ziggurat-opt %s -p 'fold-constants{max_elements=4}' | filecheck %s --check-prefix=SMALL

// A weight transpose, elementwise arithmetic on constants, Shape-derived values: all folded,
// and the constants they consumed are gone.
// CHECK-LABEL: func.func @fold
// CHECK-NEXT:    %{{.*}} = graph.constant dense<{{\[}}[1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %{{.*}} = graph.constant dense<[3.000000e+00, 5.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %{{.*}} = graph.matmul
// CHECK-NEXT:    %{{.*}} = graph.add
// CHECK-NEXT:    %{{.*}} = graph.constant dense<[2.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    func.return
// SMALL-LABEL: func.func @fold
// SMALL-NOT:   graph.transpose
func.func @fold(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<2xf32>) {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %b = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %two = graph.constant dense<2.0> : tensor<2xf32>
  %b2 = graph.add %b, %two : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %c = graph.constant dense<[0.0, -1.0]> : tensor<2xf32>
  %b3 = graph.sub %b2, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %y = graph.matmul %x, %wt : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %z = graph.add %y, %b3 : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %s = graph.shape %x : (tensor<3x2xf32>) -> tensor<2xi64>
  %sf = graph.cast %s : (tensor<2xi64>) -> tensor<2xf32>
  %one = graph.constant dense<1.0> : tensor<1xf32>
  %sm = graph.sub %sf, %one : (tensor<2xf32>, tensor<1xf32>) -> tensor<2xf32>
  func.return %z, %sm : tensor<3x2xf32>, tensor<2xf32>
}

// Unsqueeze and concat of constants fold; with max_elements=4 the 6-element concat stays (SMALL).
// CHECK-LABEL: func.func @concat
// CHECK-NEXT:    %{{.*}} = graph.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT:    func.return
// SMALL-LABEL: func.func @concat
// SMALL-NEXT:    %{{.*}} = graph.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<1x3xf32>
// SMALL-NEXT:    %{{.*}} = graph.constant dense<{{\[}}[4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<1x3xf32>
// SMALL-NEXT:    %{{.*}} = graph.concat
func.func @concat() -> tensor<2x3xf32> {
  %a = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = graph.constant dense<[4.0, 5.0, 6.0]> : tensor<3xf32>
  %ua = graph.unsqueeze %a {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<1x3xf32>
  %ub = graph.unsqueeze %b {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<1x3xf32>
  %c = graph.concat %ua, %ub {axis = 0 : i64} : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}

// Not folded: a non-constant operand; a convolution (no numpy semantics here).
// CHECK-LABEL: func.func @keep
// CHECK:         graph.mul
// CHECK:         graph.conv
func.func @keep(%x: tensor<2xf32>, %i: tensor<1x1x3x3xf32>) -> (tensor<2xf32>, tensor<1x1x3x3xf32>) {
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = graph.mul %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %ci = graph.constant dense<1.0> : tensor<1x1x3x3xf32>
  %w = graph.constant dense<2.0> : tensor<1x1x1x1xf32>
  %z = graph.conv %ci, %w : (tensor<1x1x3x3xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x3xf32>
  func.return %y, %z : tensor<2xf32>, tensor<1x1x3x3xf32>
}
