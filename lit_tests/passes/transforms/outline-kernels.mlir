// RUN: ziggurat-opt %s -p outline-kernels | filecheck %s

// Two identical kernels share one private function; @main only calls.

// CHECK:      func.func private @kernel_0(%0: memref<2x3xf32>, %1: memref<2x3xf32>) {
// CHECK-NEXT:   linalg.generic
// CHECK:          math.exp
// CHECK:        func.return
// CHECK-NOT:  func.func private @kernel_1
// CHECK:      func.func @main(%x: memref<2x3xf32>, %y: memref<2x3xf32>) {
// CHECK:        func.call @kernel_0(%x, %[[T:[a-z0-9_]+]]) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
// CHECK-NEXT:   func.call @kernel_0(%[[T]], %y) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
// CHECK-NOT:    linalg.generic

func.func @main(%x: memref<2x3xf32>, %y: memref<2x3xf32>) {
  %arena = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<2x3xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x: memref<2x3xf32>) outs(%t : memref<2x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t : memref<2x3xf32>) outs(%y: memref<2x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = math.exp %a : f32
    linalg.yield %s : f32
  }
  memref.dealloc %arena : memref<64xi8>
  func.return
}
