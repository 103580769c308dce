// RUN: ziggurat-opt %s -p convert-arith-to-llvm | filecheck %s

func.func @scalar(%a: index, %x: f32, %y: f32, %n: i32) -> f32 {
  %c = arith.constant 3 : index
  %s = arith.addi %a, %c : index
  %i = arith.index_cast %s : index to i64
  %f = arith.sitofp %i : i64 to f32
  %m = arith.maximumf %x, %f : f32
  %cmp = arith.cmpf ogt, %m, %y : f32
  %sel = arith.select %cmp, %m, %y : f32
  %mn = arith.minsi %n, %n : i32
  %mf = arith.sitofp %mn : i32 to f32
  %out = arith.addf %sel, %mf : f32
  func.return %out : f32
}

// CHECK-LABEL: func.func @scalar
// CHECK: %c = llvm.mlir.constant(3) : i64
// CHECK: %s = llvm.add %{{.*}}, %c : i64
// CHECK: llvm.sitofp %{{.*}} : i64 to f32
// CHECK: llvm.call_intrinsic "llvm.maximum"(%x, %{{.*}}) : (f32, f32) -> f32
// CHECK: llvm.fcmp "ogt"
// CHECK: llvm.select
// CHECK: llvm.call_intrinsic "llvm.smin"(%n, %n) : (i32, i32) -> i32
// CHECK-NOT: arith.

func.func @vector(%a: vector<16xf32>) -> vector<16xf32> {
  %z = arith.constant dense<0.0> : vector<16xf32>
  %r = arith.mulf %a, %z fastmath<contract> : vector<16xf32>
  func.return %r : vector<16xf32>
}

// CHECK-LABEL: func.func @vector
// CHECK: llvm.mlir.constant(dense<0.000000e+00> : vector<16xf32>) : vector<16xf32>
// CHECK: llvm.fmul %a, %{{.*}} {fastmathFlags = #llvm.fastmath<contract>} : vector<16xf32>
