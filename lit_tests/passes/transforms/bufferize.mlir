// RUN: ziggurat-opt %s -p bufferize | filecheck %s

// Elementwise chain with a weight: the constant becomes a global, intermediates live in one
// arena, and the last kernel writes the out-param directly.

// CHECK:      builtin.module attributes {ziggurat.memory_plan = {total_bytes = 24 : i64, arena_bytes = 64 : i64}}
// CHECK:      "memref.global"() <{sym_name = "__constant_0", type = memref<2x3xf32>
// CHECK-SAME: sym_visibility = "private", constant
// CHECK:      func.func @main(%x: memref<2x3xf32> {ziggurat.name = "x"}, %[[OUT:[a-z0-9_]+]]: memref<2x3xf32> {ziggurat.name = "y"}) {
// CHECK-NEXT:   %[[W:[a-z0-9_]+]] = memref.get_global @__constant_0 : memref<2x3xf32>
// CHECK-NEXT:   %[[ARENA:[a-z0-9_]+]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK-NEXT:   %[[OFF:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT:   %[[A:[a-z0-9_]+]] = memref.view %[[ARENA]][%[[OFF]]][] : memref<64xi8> to memref<2x3xf32>
// CHECK-NEXT:   linalg.generic
// CHECK-SAME:   ins(%x, %[[W]] : memref<2x3xf32>, memref<2x3xf32>) outs(%[[A]] : memref<2x3xf32>)
// CHECK:        linalg.generic
// CHECK-SAME:   ins(%[[A]] : memref<2x3xf32>) outs(%[[OUT]] : memref<2x3xf32>)
// CHECK:        memref.dealloc %[[ARENA]] : memref<64xi8>
// CHECK-NEXT:   func.return
// CHECK-NOT:  tensor

func.func @main(%x: tensor<2x3xf32> {ziggurat.name = "x"}) -> (tensor<2x3xf32> {ziggurat.name = "y"}) {
  %cst = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %cst : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x3xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<2x3xf32>) outs(%e1 : tensor<2x3xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = math.exp %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %b : tensor<2x3xf32>
}
