// REQUIRES: mlir-opt
// RUN: ziggurat-opt %s -p 'convert-linalg-to-gpu{target=cuda}' | mlir-opt --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_90 features=+ptx80},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1}),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})' > %t.mlir
// RUN: python %S/Inputs/extract_ptx.py < %t.mlir | filecheck %s
// RUN: %if ptxas %{ python %S/Inputs/extract_ptx.py < %t.mlir > %t.ptx && ptxas -arch=sm_90 -c %t.ptx -o %t.cubin %}
// The gpu level is real MLIR: upstream mlir-opt-22 lowers it to PTX (no CUDA toolkit needed),
// and ptxas, where the toolkit is installed, assembles it for sm_90. The staged buffers are
// .shared arrays and the barriers bar.sync. math.fma becomes a call to libdevice's __nv_fmaf (linked later), so
// ptxas assembles it as relocatable code (-c).

// CHECK: .target sm_90
// CHECK: .entry kernel_0_0(
// CHECK: .entry kernel_0_1(
// CHECK-DAG: .shared .align {{[0-9]+}} .b8 kernel_0_1_stage0[1024]
// CHECK-DAG: .shared .align {{[0-9]+}} .b8 kernel_0_1_stage1[1024]
// CHECK: bar.sync 0
// CHECK: call.uni (retval0), __nv_fmaf

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
