// RUN: ziggurat-opt %s --split-input-file -p 'winograd{tile=4}' | filecheck %s
// RUN: ziggurat-opt %s --split-input-file -p 'winograd' | filecheck %s --check-prefix=AUTO
// RUN: ziggurat-opt %s --split-input-file -p 'winograd{tile=4},convert-graph-to-linalg' | filecheck %s --check-prefix=LINALG

// A blocked 3x3 stride-1 conv with bias: its 8x8 output is 2x2 tiles of F(4x4), 36 transform
// points; the weights become one 8x8 (C x K) matrix per point; the bias moves to the output
// half. The default keeps a conv this narrow direct (the transforms would cost more).
// CHECK-LABEL: func.func @conv
// CHECK-NEXT:  %[[U:.*]] = graph.constant dense<{{.*}}> : tensor<36x8x8xf32>
// CHECK-NEXT:  %[[V:.*]] = graph.winograd_input %x {tile = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x8x8x8xf32>) -> tensor<36x4x8xf32>
// CHECK-NEXT:  %[[M:.*]] = graph.matmul %[[V]], %[[U]] : (tensor<36x4x8xf32>, tensor<36x8x8xf32>) -> tensor<36x4x8xf32>
// CHECK-NEXT:  %[[Y:.*]] = graph.winograd_output %[[M]], %b {tile = 4 : i64, image = array<i64: 8, 8>, block = 8 : i64} : (tensor<36x4x8xf32>, tensor<8xf32>) -> tensor<1x1x8x8x8xf32>
// CHECK-NEXT:  func.return %[[Y]]
// AUTO-LABEL: func.func @conv
// AUTO:        graph.conv_nchwc
// AUTO-NOT:    graph.winograd_input
// Each half is a row pass and a column pass over the (points, points, N, tiles, blocks, lanes)
// intermediate; the column pass of the output writes the image at m * tile + point.
// LINALG-LABEL: func.func @conv
// LINALG-COUNT-2: ziggurat.winograd = "input"
// LINALG:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
// LINALG:         ziggurat.winograd = "output"
// LINALG:         affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, ((d2 * 4) + d3), ((d4 * 4) + d5), d6)>], {{.*}} attrs = {ziggurat.winograd = "output"}
func.func @conv(%x: tensor<1x1x8x8x8xf32>, %b: tensor<8xf32>) -> tensor<1x1x8x8x8xf32> {
  %w = graph.constant dense<1.0> : tensor<1x1x3x3x8x8xf32>
  %y = graph.conv_nchwc %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x8x8x8xf32>, tensor<1x1x3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x1x8x8x8xf32>
  func.return %y : tensor<1x1x8x8x8xf32>
}

// -----

// Strides and weights computed at run time stay direct.
// CHECK-LABEL: func.func @direct
// CHECK-NOT:   graph.winograd_input
// CHECK-COUNT-2: graph.conv_nchwc
func.func @direct(%x: tensor<1x1x7x7x8xf32>, %wv: tensor<1x1x3x3x8x8xf32>) -> (tensor<1x1x4x4x8xf32>, tensor<1x1x7x7x8xf32>) {
  %w = graph.constant dense<1.0> : tensor<1x1x3x3x8x8xf32>
  %s = graph.conv_nchwc %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x7x7x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x4x4x8xf32>
  %r = graph.conv_nchwc %x, %wv {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x7x7x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x7x7x8xf32>
  func.return %s, %r : tensor<1x1x4x4x8xf32>, tensor<1x1x7x7x8xf32>
}

// -----

// A 7x7 output is computed as 2x2 whole 4x4 tiles (the input padded one more row and column)
// and cut back to 7x7 by the output half.
// CHECK-LABEL: func.func @cut
// CHECK:       graph.winograd_input %x {tile = 4 : i64, pads = array<i64: 1, 1, 2, 2>} : (tensor<1x1x7x7x8xf32>) -> tensor<36x4x8xf32>
// CHECK:       graph.winograd_output %{{.*}} {tile = 4 : i64, image = array<i64: 7, 7>, block = 8 : i64} : (tensor<36x4x8xf32>) -> tensor<1x1x7x7x8xf32>
// LINALG-LABEL: func.func @cut
// LINALG:       tensor.extract_slice %{{.*}}[0, 0, 0, 0, 0] [1, 1, 7, 7, 8] [1, 1, 1, 1, 1] : tensor<1x1x8x8x8xf32> to tensor<1x1x7x7x8xf32>
func.func @cut(%x: tensor<1x1x7x7x8xf32>) -> tensor<1x1x7x7x8xf32> {
  %w = graph.constant dense<1.0> : tensor<1x1x3x3x8x8xf32>
  %a = graph.conv_nchwc %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x7x7x8xf32>, tensor<1x1x3x3x8x8xf32>) -> tensor<1x1x7x7x8xf32>
  func.return %a : tensor<1x1x7x7x8xf32>
}
