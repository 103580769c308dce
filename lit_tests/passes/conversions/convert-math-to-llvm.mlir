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
// CHECK: llvm.intr.exp(%x) : (f32) -> f32
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
