// RUN: ziggurat-opt %s -p 'convert-linalg-to-gpu{target=cuda}' | filecheck %s
// RUN: %if mlir-opt %{ ziggurat-opt %s -p 'convert-linalg-to-gpu{target=cuda}' | mlir-opt --verify-each | filecheck %s --check-prefix=MLIR %}
// A matmul kernel function with an explicit GPU schedule: 32x32 block tiles, 4x4 register tiles
// per thread (8x8 = 64 threads), the reduction staged 8 deep with A and B in workgroup memory.
// Its linalg.fill cannot run inside the staged nest (the reduction is tiled), so the function
// becomes two kernels launched in order. The second RUN line checks upstream MLIR accepts it.

// MLIR: gpu.container_module
// MLIR: gpu.module @kernels
// MLIR: gpu.func @kernel_0_0{{.*}} kernel
// MLIR: gpu.func @kernel_0_1{{.*}} kernel
// MLIR: gpu.barrier

// CHECK-LABEL: func.func @main
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[G0:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[B0:.*]] = arith.constant 256 : index
// CHECK:         "gpu.launch_func"(%[[G0]], %[[ONE]], %[[ONE]], %[[B0]], %[[ONE]], %[[ONE]], %a, %b, %c) <{kernel = @kernels::@kernel_0_0
// CHECK:         %[[B1:.*]] = arith.constant 64 : index
// CHECK:         "gpu.launch_func"({{.*}}, %[[B1]], {{.*}}, %a, %b, %c) <{kernel = @kernels::@kernel_0_1
// CHECK-NOT:     func.call

// CHECK:       "gpu.module"() <{sym_name = "kernels"}>
// The fill (its default schedule): one element per thread, neighbours on neighbouring threads.
// CHECK:         "gpu.func"()
// CHECK:           "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK:           "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK:           memref.store %z, %c
// CHECK-NEXT:      "gpu.return"()
// CHECK:         }) {sym_name = "kernel_0_0", gpu.kernel}

// The staged matmul: workgroup buffers for one 32x8 box of A and one 8x32 box of B.
// CHECK:         "memref.global"() <{sym_name = "kernel_0_1_stage0", type = memref<256xf32, 3 : i64>, initial_value, sym_visibility = "private"}>
// CHECK:         "memref.global"() <{sym_name = "kernel_0_1_stage1", type = memref<256xf32, 3 : i64>, initial_value, sym_visibility = "private"}>
// CHECK:         "gpu.func"()
// CHECK-DAG:       %[[S1:.*]] = memref.get_global @kernel_0_1_stage1
// CHECK-DAG:       %[[S0:.*]] = memref.get_global @kernel_0_1_stage0
// CHECK-DAG:       %[[TID:.*]] = "gpu.thread_id"()
// CHECK-DAG:       %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG:       %[[C64:.*]] = arith.constant 64 : index
// The reduction steps of 8; in each, every thread copies elements tid, tid+64, ... of each box
// CHECK:           scf.for %[[K0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             scf.for %[[E:.*]] = %[[TID]] to %[[C256]] step %[[C64]] {
// CHECK:               %[[X:.*]] = memref.load %a[
// CHECK:               memref.store %[[X]], %[[S0]][%[[E]]]
// CHECK:             scf.for %[[E2:.*]] = %[[TID]] to %[[C256]] step %[[C64]] {
// CHECK:               %[[Y:.*]] = memref.load %b[
// CHECK:               memref.store %[[Y]], %[[S1]][%[[E2]]]
// CHECK:             "gpu.barrier"()
// 16 accumulators per thread, FMAs on values read from workgroup memory
// CHECK:             scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK:               memref.load %[[S0]]
// CHECK:               memref.load %[[S1]]
// CHECK:               math.fma
// CHECK-COUNT-16:    memref.store
// CHECK-NEXT:        "gpu.barrier"()
// CHECK:           "gpu.return"()
// CHECK:         }) {sym_name = "kernel_0_1", gpu.kernel}

builtin.module {
  func.func private @kernel_0(%a: memref<64x32xf32>, %b: memref<32x64xf32>, %c: memref<64x64xf32>) {
    %z = arith.constant 0.0 : f32
    linalg.fill ins(%z : f32) outs(%c : memref<64x64xf32>)
    linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<64x32xf32>, memref<32x64xf32>) outs(%c : memref<64x64xf32>) attrs = {sched.schedule = #sched.schedule<tile = [32, 32, 8], order = [0, 1, 2], unroll = [4, 4, 1], vector = -1, width = 1, pack = [0, 1]>} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    }
    func.return
  }
  func.func @main(%a: memref<64x32xf32>, %b: memref<32x64xf32>, %c: memref<64x64xf32>) {
    func.call @kernel_0(%a, %b, %c) : (memref<64x32xf32>, memref<32x64xf32>, memref<64x64xf32>) -> ()
    func.return
  }
}
