// RUN: ziggurat-opt %s | filecheck %s
// RUN: ziggurat-opt %s | ziggurat-opt | filecheck %s
// RUN: ziggurat-opt %s -p convert-vector-to-llvm,convert-arith-to-llvm | ziggurat-opt | filecheck %s --check-prefix=LOWERED
// RUN: %if mlir-opt %{ ziggurat-opt %s | mlir-opt | filecheck %s --check-prefix=MLIR %}
// The LLVM ops that xDSL lacks (dialects/llvm_extras.py) parse in ziggurat-opt, so LLVM-level
// output re-parses: llvm.extractelement, llvm.fptosi, llvm.fptoui, llvm.uitofp.

// CHECK-LABEL: llvm.func @extras(%v: vector<16xf32>, %i: i64) -> f32 {
// CHECK-NEXT:    %e = llvm.extractelement %v[%i : i64] : vector<16xf32>
// CHECK-NEXT:    %s = llvm.fptosi %e : f32 to i32
// CHECK-NEXT:    %u = llvm.fptoui %e : f32 to i32
// CHECK-NEXT:    %f = llvm.uitofp %u : i32 to f32
// CHECK-NEXT:    llvm.return %f : f32
// CHECK-NEXT:  }
// MLIR-LABEL:  llvm.func @extras
// MLIR:          llvm.extractelement
// MLIR:          llvm.fptosi
// MLIR:          llvm.fptoui
// MLIR:          llvm.uitofp
llvm.func @extras(%v: vector<16xf32>, %i: i64) -> f32 {
  %e = llvm.extractelement %v[%i : i64] : vector<16xf32>
  %s = llvm.fptosi %e : f32 to i32
  %u = llvm.fptoui %e : f32 to i32
  %f = llvm.uitofp %u : i32 to f32
  llvm.return %f : f32
}

// The lowering of vector.extract and arith casts produces them; the result parses again.
// LOWERED-LABEL: func.func @lowered
// LOWERED:         llvm.extractelement %{{.*}}[%{{.*}} : i64] : vector<16xf32>
// LOWERED:         llvm.fptosi %{{.*}} : f32 to i32
// LOWERED:         llvm.uitofp %{{.*}} : i32 to f32
func.func @lowered(%v: vector<16xf32>, %n: i32) -> (i32, f32) {
  %e = vector.extract %v[3] : f32 from vector<16xf32>
  %s = arith.fptosi %e : f32 to i32
  %f = arith.uitofp %n : i32 to f32
  func.return %s, %f : i32, f32
}
