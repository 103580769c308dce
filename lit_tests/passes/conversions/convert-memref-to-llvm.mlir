// RUN: ziggurat-opt %s -p convert-memref-to-llvm | filecheck %s

func.func @f(%m: memref<8x16xf32, strided<[32, 1], offset: 5>>, %i: index, %j: index) {
  %a = memref.load %m[%i, %j] : memref<8x16xf32, strided<[32, 1], offset: 5>>
  %arena = memref.alloc() {alignment = 64 : i64} : memref<100xi8>
  %c4 = arith.constant 4 : index
  %v = memref.view %arena[%c4][] : memref<100xi8> to memref<4xf32>
  memref.store %a, %v[%i] : memref<4xf32>
  memref.dealloc %arena : memref<100xi8>
  func.return
}

// CHECK-LABEL: func.func @f
// CHECK: llvm.mlir.constant(32) : i64
// CHECK: llvm.mul
// CHECK: llvm.add
// CHECK: llvm.mlir.constant(5) : i64
// CHECK: llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK: llvm.mlir.constant(128) : i64
// CHECK: llvm.call @aligned_alloc
// CHECK: llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK: llvm.call @free
// CHECK-NOT: memref.load
// CHECK-DAG: llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @free(!llvm.ptr)
