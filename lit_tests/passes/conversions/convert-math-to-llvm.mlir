// RUN: ziggurat-opt %s -p convert-math-to-llvm | filecheck %s

func.func @f(%x: f32, %v: vector<16xf32>) -> (f32, vector<16xf32>) {
  %e = math.exp %x : f32
  %p = math.powf %e, %x : f32
  %t = math.tanh %p : f32
  %s = math.sqrt %v : vector<16xf32>
  %r = math.erf %s : vector<16xf32>
  func.return %t, %r : f32, vector<16xf32>
}

// CHECK-LABEL: func.func @f
// exp is inline (passes/conversions/vector_math.py): clamp keeping NaN, n = roundeven(x log2 e),
// r = x - n ln 2 in two FMAs, a polynomial in r by FMAs, then 2^n in two exponent-bit factors
// CHECK: %[[LO:.*]] = llvm.call_intrinsic "llvm.maximum"(%x, %{{.*}}) : (f32, f32) -> f32
// CHECK: %[[X:.*]] = llvm.call_intrinsic "llvm.minimum"(%[[LO]], %{{.*}}) : (f32, f32) -> f32
// CHECK: %[[N:.*]] = llvm.call_intrinsic "llvm.roundeven"
// CHECK: llvm.intr.fma(%[[N]], %{{.*}}, %[[X]])
// CHECK: llvm.mlir.constant(0x4B00007F : f32) : f32
// CHECK: llvm.bitcast %{{.*}} : f32 to i32
// CHECK: llvm.shl
// CHECK: llvm.bitcast %{{.*}} : i32 to f32
// CHECK-NOT: llvm.intr.exp
// CHECK: llvm.intr.pow
// CHECK: llvm.call @tanhf(%{{.*}}) : (f32) -> f32
// CHECK: llvm.intr.sqrt(%v) : (vector<16xf32>) -> vector<16xf32>
// vector erf is an inline rational approximation: clamp, then FMAs, then one divide
// CHECK: llvm.intr.maxnum
// CHECK: llvm.intr.minnum
// CHECK: llvm.intr.fma
// CHECK: llvm.fdiv
// CHECK-NOT: math.
// CHECK: llvm.func @tanhf(f32) -> f32
