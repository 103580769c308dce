// RUN: ziggurat-opt %s -p convert-graph-to-linalg | filecheck %s

// CHECK-LABEL: func.func @conv_pads_groups
// CHECK-SAME:    {ziggurat.name = "input"}
// CHECK-SAME:    {ziggurat.name = "output"}
// CHECK:         %[[BIAS:[a-z0-9_]+]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// Padding fills only the border (four non-overlapping slabs), then copies the input inside.
// CHECK:         %[[E:[a-z0-9_]+]] = tensor.empty() : tensor<1x4x8x8xf32>
// CHECK:         %[[TOP:[a-z0-9_]+]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x4x1x8xf32>)
// CHECK:         %[[P1:[a-z0-9_]+]] = tensor.insert_slice %[[TOP]] into %[[E]][0, 0, 0, 0] [1, 4, 1, 8] [1, 1, 1, 1]
// CHECK:         %[[P2:[a-z0-9_]+]] = tensor.insert_slice %{{.*}} into %[[P1]][0, 0, 7, 0] [1, 4, 1, 8] [1, 1, 1, 1]
// CHECK:         %[[P3:[a-z0-9_]+]] = tensor.insert_slice %{{.*}} into %[[P2]][0, 0, 1, 0] [1, 4, 6, 1] [1, 1, 1, 1]
// CHECK:         %[[P4:[a-z0-9_]+]] = tensor.insert_slice %{{.*}} into %[[P3]][0, 0, 1, 7] [1, 4, 6, 1] [1, 1, 1, 1]
// CHECK:         %[[PAD:[a-z0-9_]+]] = tensor.insert_slice %{{.*}} into %[[P4]][0, 0, 1, 1] [1, 4, 6, 6] [1, 1, 1, 1]
// CHECK:         %[[X5:[a-z0-9_]+]] = tensor.expand_shape %[[PAD]] {{.*}} into tensor<1x2x2x8x8xf32>
// CHECK:         %[[W:[a-z0-9_]+]] = arith.constant dense<1.000000e+00> : tensor<2x2x3x3x2xf32>
// CHECK:         %[[B2:[a-z0-9_]+]] = tensor.expand_shape %[[BIAS]] {{.*}} into tensor<2x2xf32>
// CHECK:         %[[INIT:[a-z0-9_]+]] = linalg.generic {{.*}} -> (d1, d2)>, {{.*}} ins(%[[B2]] : tensor<2x2xf32>) outs(%{{.*}} : tensor<1x2x2x3x3xf32>)
// CHECK:         %[[CONV:[a-z0-9_]+]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, ((d3 * 2) + d6), ((d4 * 2) + d7))>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d6, d7, d2)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[X5]], %[[W]] : {{.*}}) outs(%[[INIT]] : tensor<1x2x2x3x3xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[C]], %[[M]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         %[[OUT:[a-z0-9_]+]] = tensor.collapse_shape %[[CONV]] {{.*}} : tensor<1x2x2x3x3xf32> into tensor<1x4x3x3xf32>
// CHECK-NEXT:    func.return %[[OUT]]
func.func @conv_pads_groups(%x: tensor<1x4x6x6xf32> {ziggurat.name = "input"}) -> (tensor<1x4x3x3xf32> {ziggurat.name = "output"}) {
  %w = graph.constant dense<1.0> : tensor<4x2x3x3xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, group = 2 : i64} : (tensor<1x4x6x6xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  func.return %y : tensor<1x4x3x3xf32>
}

// CHECK-LABEL: func.func @conv_dynamic_weight
// CHECK-NOT:     tensor.insert_slice
// CHECK:         %[[WT:[a-z0-9_]+]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d3, d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]{{.*}} outs(%{{.*}} : tensor<3x3x3x8xf32>)
// CHECK:         %[[Z:[a-z0-9_]+]] = linalg.fill {{.*}} -> tensor<1x8x3x3xf32>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, (d2 + d5), (d3 + d6))>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d1)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.*}}, %[[WT]] : {{.*}}) outs(%[[Z]] : tensor<1x8x3x3xf32>)
func.func @conv_dynamic_weight(%x: tensor<1x3x5x5xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x3x3xf32> {
  %y = graph.conv %x, %w : (tensor<1x3x5x5xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x3x3xf32>
  func.return %y : tensor<1x8x3x3xf32>
}

// CHECK-LABEL: func.func @matmul_batch
// CHECK:         %[[Z:[a-z0-9_]+]] = linalg.fill {{.*}} -> tensor<2x3x5xf32>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} {{.*}} outs(%[[Z]] : tensor<2x3x5xf32>)
// CHECK:           arith.mulf
// CHECK-NEXT:      arith.addf
func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %y = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  func.return %y : tensor<2x3x5xf32>
}

// CHECK-LABEL: func.func @add_broadcast
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK:           arith.addf
// CHECK-NOT:     linalg.generic
// CHECK:         func.return
func.func @add_broadcast(%a: tensor<2x3x4xf32>, %b: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %y = graph.add %a, %b : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK:         %[[NINF:[a-z0-9_]+]] = arith.constant 0xff800000 : f32
// CHECK:         %[[MI:[a-z0-9_]+]] = linalg.fill ins(%[[NINF]] : f32) {{.*}} -> tensor<2xf32>
// CHECK:         %[[MAX:[a-z0-9_]+]] = linalg.generic {{.*}} -> (d0)>], iterator_types = ["parallel", "reduction"]} {{.*}} outs(%[[MI]] : tensor<2xf32>)
// CHECK:           arith.maximumf
// CHECK:         %[[E:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]] : tensor<2x8xf32>, tensor<2xf32>)
// CHECK:           arith.subf
// CHECK-NEXT:      math.exp
// CHECK:         %[[SUM:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[E]] : tensor<2x8xf32>)
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}} ins(%[[E]], %[[SUM]] : tensor<2x8xf32>, tensor<2xf32>)
// CHECK:           arith.divf
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = graph.softmax %x {axis = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @reshape
// CHECK:         tensor.collapse_shape %{{.*}} {{\[\[}}0 : i64, 1 : i64], [2 : i64]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK:         %[[FLAT:[a-z0-9_]+]] = tensor.collapse_shape %{{.*}} : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK:         tensor.expand_shape %[[FLAT]] {{.*}} output_shape [4, 6] : tensor<24xf32> into tensor<4x6xf32>
func.func @reshape(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<4x6xf32>) {
  %y = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %z = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
  func.return %y, %z : tensor<6x4xf32>, tensor<4x6xf32>
}

// CHECK-LABEL: func.func @concat
// CHECK:         %[[E:[a-z0-9_]+]] = tensor.empty() : tensor<2x4xf32>
// CHECK:         %[[I:[a-z0-9_]+]] = tensor.insert_slice %{{.*}} into %[[E]][0, 0] [2, 1] [1, 1]
// CHECK:         tensor.insert_slice %{{.*}} into %[[I]][0, 1] [2, 3] [1, 1]
func.func @concat(%a: tensor<2x1xf32>, %b: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @slice
// CHECK:         tensor.extract_slice %{{.*}}[1, 0] [2, 3] [1, 2] : tensor<4x6xf32> to tensor<2x3xf32>
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, ((d1 * -1) + 5))>, affine_map<(d0, d1) -> (d0, d1)>]
func.func @slice(%x: tensor<4x6xf32>) -> (tensor<2x3xf32>, tensor<4x6xf32>) {
  %y = graph.slice %x {starts = array<i64: 1, 0>, ends = array<i64: 3, 6>, steps = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<2x3xf32>
  %z = graph.slice %x {starts = array<i64: 0, 5>, ends = array<i64: 4, -1>, steps = array<i64: 1, -1>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %y, %z : tensor<2x3xf32>, tensor<4x6xf32>
}
