// RUN: ziggurat-opt %s -p 'convert-math-to-llvm{cpu=znver4}' | filecheck %s --check-prefix=AVX512
// RUN: ziggurat-opt %s -p 'convert-math-to-llvm{cpu=x86-64-v3}' | filecheck %s --check-prefix=AVX2
// RUN: not ziggurat-opt %s -p 'convert-math-to-llvm{cpu=pentium}' 2>&1 | filecheck %s --check-prefix=BAD

// A vector exp scales its polynomial by 2^n with llvm.ldexp where the CPU has AVX-512 (one
// vscalefps; n as an i32 from the 1.5 * 2^23 rounding constant, 0x4B400000), and with two
// exponent-bit factors elsewhere (a vector ldexp would be a libm call per lane there).

// AVX512-LABEL: func.func @vexp
// AVX512:       llvm.call_intrinsic "llvm.roundeven"
// AVX512:       %[[BITS:.*]] = llvm.bitcast %{{.*}} : vector<16xf32> to vector<16xi32>
// AVX512-NEXT:  %[[BIAS:.*]] = llvm.mlir.constant(dense<1262485504> : vector<16xi32>) : vector<16xi32>
// AVX512-NEXT:  %[[K:.*]] = llvm.sub %[[BITS]], %[[BIAS]] : vector<16xi32>
// AVX512-NEXT:  %{{.*}} = llvm.call_intrinsic "llvm.ldexp.v16f32.v16i32"(%{{.*}}, %[[K]]) : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
// AVX512-NOT:   llvm.shl

// AVX2-LABEL:   func.func @vexp
// AVX2-NOT:     llvm.ldexp
// AVX2:         llvm.intr.floor
// AVX2:         llvm.shl
// AVX2:         llvm.shl
// AVX2-NOT:     llvm.ldexp

// BAD: unknown CPU 'pentium' (known: host, znver4, znver5, x86-64-v3)

func.func @vexp(%v: vector<16xf32>) -> vector<16xf32> {
  %e = math.exp %v : vector<16xf32>
  func.return %e : vector<16xf32>
}
