// RUN: ziggurat-opt %s -p convert-vector-to-llvm | filecheck %s

func.func @f(%m: memref<64xf32>, %i: index, %s: f32) -> f32 {
  %v = vector.load %m[%i] : memref<64xf32>, vector<16xf32>
  %b = vector.broadcast %s : f32 to vector<16xf32>
  %f = vector.fma %v, %b, %v : vector<16xf32>
  vector.store %f, %m[%i] : memref<64xf32>, vector<16xf32>
  %r = vector.reduction <add>, %f : vector<16xf32> into f32
  %e = vector.extract %f[3] : f32 from vector<16xf32>
  %x = arith.addf %r, %e : f32
  func.return %x : f32
}

// CHECK-LABEL: func.func @f
// CHECK: llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK: llvm.insertelement %s, %{{.*}}[%{{.*}} : i32] : vector<16xf32>
// CHECK: llvm.shufflevector %{{.*}}, %{{.*}} [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] : vector<16xf32>
// CHECK: llvm.intr.fma
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
// CHECK: llvm.intr.vector.reduce.fadd"(%{{.*}}, %{{.*}}) <{fastmathFlags = #llvm.fastmath<reassoc>}>
// CHECK: llvm.extractelement %{{.*}}[%{{.*}} : i64] : vector<16xf32>
// CHECK-NOT: vector.
