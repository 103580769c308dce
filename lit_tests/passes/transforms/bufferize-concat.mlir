// RUN: ziggurat-opt %s -p bufferize | filecheck %s

// Concat is copy-free: each producer writes straight into its slice of the out-param.

// CHECK:      func.func @main(%x: memref<2x3xf32>, %[[OUT:[a-z0-9_]+]]: memref<4x3xf32>) {
// CHECK-NEXT:   %[[TOP:[a-z0-9_]+]] = memref.subview %[[OUT]][0, 0] [2, 3] [1, 1] : memref<4x3xf32> to memref<2x3xf32, strided<[3, 1]>>
// CHECK-NEXT:   linalg.generic
// CHECK-SAME:   outs(%[[TOP]] : memref<2x3xf32, strided<[3, 1]>>)
// CHECK:        %[[BOT:[a-z0-9_]+]] = memref.subview %[[OUT]][2, 0] [2, 3] [1, 1] : memref<4x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 6>>
// CHECK-NEXT:   linalg.generic
// CHECK-SAME:   outs(%[[BOT]] : memref<2x3xf32, strided<[3, 1], offset: 6>>)
// CHECK-NOT:    memref.alloc
// CHECK:        func.return

func.func @main(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %e0 = tensor.empty() : tensor<2x3xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = math.exp %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x3xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e1 : tensor<2x3xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.mulf %p, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  %e = tensor.empty() : tensor<4x3xf32>
  %c0 = tensor.insert_slice %a into %e[0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<4x3xf32>
  %c1 = tensor.insert_slice %b into %c0[2, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<4x3xf32>
  return %c1 : tensor<4x3xf32>
}
