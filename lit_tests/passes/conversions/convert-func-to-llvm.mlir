// RUN: ziggurat-opt %s -p convert-func-to-llvm | filecheck %s

func.func private @kernel(%a: memref<16xf32>, %s: f32) -> f32 {
  func.return %s : f32
}
func.func @main(%a: memref<16xf32>, %n: index) {
  %s = arith.constant 1.0 : f32
  %r = func.call @kernel(%a, %s) : (memref<16xf32>, f32) -> f32
  func.return
}

// CHECK: llvm.func internal @kernel(%a: !llvm.ptr, %s: f32) -> f32
// CHECK: llvm.return %{{.*}} : f32
// CHECK: llvm.func @main(%{{.*}}: !llvm.ptr, %n: i64)
// CHECK: llvm.call @kernel(%{{.*}}, %{{.*}}) : (!llvm.ptr, f32) -> f32
// CHECK: llvm.return
// CHECK-NOT: func.
