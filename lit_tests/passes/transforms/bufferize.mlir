// RUN: ziggurat-opt %s --split-input-file -p bufferize | filecheck %s

// Elementwise chain with a weight: the constant becomes a global. The exp is returned, so it
// does not write over its dead input (that buffer would then be copied to the out-param): it
// writes the out-param itself, and the add's result lives in the arena.

// CHECK:      builtin.module attributes {ziggurat.memory_plan = {total_bytes = 24 : i64, arena_bytes = 64 : i64}}
// CHECK:      "memref.global"() <{sym_name = "__constant_0", type = memref<2x3xf32>
// CHECK-SAME: sym_visibility = "private", constant
// CHECK:      func.func @main(%x: memref<2x3xf32> {ziggurat.name = "x"}, %[[OUT:[a-z0-9_]+]]: memref<2x3xf32> {ziggurat.name = "y"}) {
// CHECK-NEXT:   %[[W:[a-z0-9_]+]] = memref.get_global @__constant_0 : memref<2x3xf32>
// CHECK:        %[[A:[a-z0-9_]+]] = memref.view
// CHECK-NEXT:   linalg.generic
// CHECK-SAME:   ins(%x, %[[W]] : memref<2x3xf32>, memref<2x3xf32>) outs(%[[A]] : memref<2x3xf32>)
// CHECK:        linalg.generic
// CHECK-SAME:   ins(%[[A]] : memref<2x3xf32>) outs(%[[OUT]] : memref<2x3xf32>)
// CHECK:        math.exp
// CHECK-NOT:    linalg.generic
// CHECK:        func.return
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

// -----

// In-place elementwise in the arena: %b (exp) overwrites the buffer of %a, which is dead after
// it; %c (a transpose, not elementwise) writes the out-param. %d reads %b at transposed
// positions, so it may not write over %b: it gets its own buffer.

// CHECK:      builtin.module attributes {ziggurat.memory_plan = {total_bytes = 32 : i64, arena_bytes = 128 : i64}}
// CHECK:      func.func @main(%x: memref<2x2xf32> {ziggurat.name = "x"}, %[[OUT:[a-z0-9_]+]]: memref<2x2xf32> {ziggurat.name = "y"}) {
// CHECK:        %[[ARENA:[a-z0-9_]+]] = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK:        %[[A:[a-z0-9_]+]] = memref.view %[[ARENA]]
// CHECK:        %[[D:[a-z0-9_]+]] = memref.view %[[ARENA]]
// CHECK-NEXT:   linalg.generic
// CHECK-SAME:   ins(%x : memref<2x2xf32>) outs(%[[A]] : memref<2x2xf32>)
// CHECK:        math.tanh
// CHECK:        linalg.generic
// CHECK-SAME:   ins(%[[A]] : memref<2x2xf32>) outs(%[[A]] : memref<2x2xf32>)
// CHECK:        math.exp
// CHECK:        linalg.generic
// CHECK-SAME:   ins(%[[A]], %[[A]] : memref<2x2xf32>, memref<2x2xf32>) outs(%[[D]] : memref<2x2xf32>)
// CHECK:        arith.subf
// CHECK:        linalg.generic
// CHECK-SAME:   ins(%[[D]] : memref<2x2xf32>) outs(%[[OUT]] : memref<2x2xf32>)
// CHECK:        memref.dealloc %[[ARENA]] : memref<128xi8>

func.func @main(%x: tensor<2x2xf32> {ziggurat.name = "x"}) -> (tensor<2x2xf32> {ziggurat.name = "y"}) {
  %e0 = tensor.empty() : tensor<2x2xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x2xf32>) outs(%e0 : tensor<2x2xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = math.tanh %p : f32
    linalg.yield %s : f32
  } -> tensor<2x2xf32>
  %e1 = tensor.empty() : tensor<2x2xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<2x2xf32>) outs(%e1 : tensor<2x2xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = math.exp %p : f32
    linalg.yield %s : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x2xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b, %b : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e2 : tensor<2x2xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.subf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<2x2xf32>
  %e3 = tensor.empty() : tensor<2x2xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<2x2xf32>) outs(%e3 : tensor<2x2xf32>) {
  ^bb0(%p: f32, %o: f32):
    linalg.yield %p : f32
  } -> tensor<2x2xf32>
  return %c : tensor<2x2xf32>
}
