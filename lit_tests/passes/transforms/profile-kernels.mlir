// RUN: ziggurat-opt %s -p outline-kernels,profile-kernels | filecheck %s
// RUN: not ziggurat-opt %s -p outline-kernels,profile-kernels,profile-kernels 2>&1 | filecheck %s --check-prefix=TWICE

// Every kernel call of @main is bracketed by two cycle-counter reads whose difference is added
// to the call site's slot (a matmul and the exp after it: slots 0 and 1); slot 2 counts @main.
// The module attribute names each slot's callee, what it computes and its FLOPs per call.

// CHECK:      builtin.module attributes {ziggurat.profile = [{kernel = "kernel_0", what = "matmul 2x4 k3", flops = 48 : i64}, {kernel = "kernel_1", what = "elementwise 2x4", flops = 8 : i64}]}
// CHECK:      "memref.global"() <{sym_name = "ziggurat_profile_cycles", type = memref<3xi64>, initial_value = dense<0> : tensor<3xi64>, sym_visibility = "public", alignment = 64 : i64}>
// CHECK:      func.func @main
// CHECK-NEXT:   %[[SLOTS:.+]] = memref.get_global @ziggurat_profile_cycles : memref<3xi64>
// CHECK-NEXT:   %[[BEGIN:.+]] = llvm.call_intrinsic "llvm.readcyclecounter"() : () -> i64
// CHECK:        %[[T0:.+]] = llvm.call_intrinsic "llvm.readcyclecounter"() : () -> i64
// CHECK-NEXT:   func.call @kernel_0(
// CHECK-NEXT:   %[[T1:.+]] = llvm.call_intrinsic "llvm.readcyclecounter"() : () -> i64
// CHECK-NEXT:   %[[I0:.+]] = arith.constant 0 : index
// CHECK-NEXT:   %[[D0:.+]] = arith.subi %[[T1]], %[[T0]] : i64
// CHECK-NEXT:   %[[OLD0:.+]] = memref.load %[[SLOTS]][%[[I0]]] : memref<3xi64>
// CHECK-NEXT:   %[[NEW0:.+]] = arith.addi %[[OLD0]], %[[D0]] : i64
// CHECK-NEXT:   memref.store %[[NEW0]], %[[SLOTS]][%[[I0]]] : memref<3xi64>
// CHECK-NEXT:   %[[T2:.+]] = llvm.call_intrinsic "llvm.readcyclecounter"() : () -> i64
// CHECK-NEXT:   func.call @kernel_1(
// CHECK-NEXT:   %[[T3:.+]] = llvm.call_intrinsic "llvm.readcyclecounter"() : () -> i64
// CHECK-NEXT:   %[[I1:.+]] = arith.constant 1 : index
// CHECK-NEXT:   arith.subi %[[T3]], %[[T2]] : i64
// CHECK:        %[[END:.+]] = llvm.call_intrinsic "llvm.readcyclecounter"() : () -> i64
// CHECK-NEXT:   %[[I2:.+]] = arith.constant 2 : index
// CHECK-NEXT:   arith.subi %[[END]], %[[BEGIN]] : i64
// CHECK:        memref.store {{.*}}[%[[I2]]] : memref<3xi64>
// CHECK-NEXT:   func.return

// TWICE: error: profile-kernels: the module is profiled already

func.func @main(%a: memref<2x3xf32>, %b: memref<3x4xf32>, %y: memref<2x4xf32>) {
  %arena = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<2x4xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<2x3xf32>, memref<3x4xf32>) outs(%t : memref<2x4xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %m = arith.mulf %x, %w : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t : memref<2x4xf32>) outs(%y : memref<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  }
  memref.dealloc %arena : memref<64xi8>
  func.return
}
