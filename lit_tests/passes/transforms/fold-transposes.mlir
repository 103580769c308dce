// RUN: ziggurat-opt %s --split-input-file -p fold-transposes | filecheck %s

// A product of panels [2, 4, 8] put back in row order by a transpose: the product writes
// [4, 2, 8] itself through (d1, d0, d2), into a zero fill of that shape; the transpose is gone.
// CHECK-LABEL: func.func @panels_back_in_row_order
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4x2x8xf32>
// CHECK-NEXT: %[[F:.*]] = linalg.fill {ziggurat.group = 0 : i64} ins(%[[Z]] : f32) outs(%[[E]] : tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
// CHECK-NEXT: %[[P:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d1, d0, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %w : tensor<4x16xf32>, tensor<2x16x8xf32>) outs(%[[F]] : tensor<4x2x8xf32>) attrs = {ziggurat.group = 0 : i64} {
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[M]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK-NEXT: } -> tensor<4x2x8xf32>
// CHECK-NEXT: func.return %[[P]] : tensor<4x2x8xf32>
#a = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#w = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#c = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#tin = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
#tout = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @panels_back_in_row_order(%a: tensor<4x16xf32>, %w: tensor<2x16x8xf32>) -> tensor<4x2x8xf32> {
  %e = tensor.empty() : tensor<2x4x8xf32>
  %z = arith.constant 0.000000e+00 : f32
  %f = linalg.fill {ziggurat.group = 0 : i64} ins(%z : f32) outs(%e : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %p = linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %w : tensor<4x16xf32>, tensor<2x16x8xf32>) outs(%f : tensor<2x4x8xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x8xf32>
  %e2 = tensor.empty() : tensor<4x2x8xf32>
  %t = linalg.generic {indexing_maps = [#tin, #tout], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p : tensor<2x4x8xf32>) outs(%e2 : tensor<4x2x8xf32>) attrs = {ziggurat.group = 1 : i64} {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x2x8xf32>
  func.return %t : tensor<4x2x8xf32>
}

// -----

// Refused: the product accumulates onto an argument (its initial value has an order), and a
// second product's result is also returned untransposed (it is wanted in both orders).
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: linalg.generic
#a2 = affine_map<(d0, d1, d2) -> (d0, d2)>
#b2 = affine_map<(d0, d1, d2) -> (d2, d1)>
#c2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @refused(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %acc: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) {
  %p = linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%acc : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<8x4xf32>
  %z = arith.constant 0.000000e+00 : f32
  %e3 = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e3 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e4 = tensor.empty() : tensor<8x4xf32>
  %u = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%q : tensor<4x8xf32>) outs(%e4 : tensor<8x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<8x4xf32>
  func.return %t, %u, %q : tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>
}
