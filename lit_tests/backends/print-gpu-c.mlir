// RUN: ziggurat-opt %s -p 'convert-linalg-to-gpu{target=cuda}' -t cuda | filecheck %s --check-prefix=CUDA
// RUN: ziggurat-opt %s -p 'convert-linalg-to-gpu{target=cuda}' -t opencl | filecheck %s --check-prefix=CL
// The C printers (`-t cuda|opencl`, like mlir-translate): the staged matmul of
// passes/conversions/convert-linalg-to-gpu.mlir as CUDA C and as OpenCL C. Kernel k's memref
// arguments are pointers (shifted by the host in CUDA C; a buffer and a byte offset in OpenCL C).

// CUDA:      extern "C" __global__ void kernel_0_0(float* arg0, float* arg1, float* arg2)
// CUDA:      extern "C" __global__ void kernel_0_1(float* arg0, float* arg1, float* arg2)
// CUDA-NEXT: {
// CUDA-DAG:      __shared__ float kernel_0_1_stage1[256];
// CUDA-DAG:      __shared__ float kernel_0_1_stage0[256];
// CUDA:          int [[TID:v[0-9]+]] = (int)threadIdx.x;
// CUDA:          int {{v[0-9]+}} = (int)blockIdx.x;
// CUDA:          for (int [[K0:v[0-9]+]] = 0; [[K0]] < 32; [[K0]] += 8) {
// CUDA-NEXT:         for (int [[E:v[0-9]+]] = [[TID]]; [[E]] < 256; [[E]] += 64) {
// CUDA:                  float [[X:v[0-9]+]] = arg0[{{.*}}];
// CUDA-NEXT:             kernel_0_1_stage0[[[E]]] = [[X]];
// CUDA:              __syncthreads();
// CUDA:              kernel_0_1_stage0[
// CUDA:              kernel_0_1_stage1[
// CUDA:              = fmaf(
// CUDA:              arg2[{{.*}}] =
// CUDA:              __syncthreads();

// CL:      __kernel void kernel_0_1(__global float* arg0_buf, const ulong arg0_byte_offset,
// CL-NEXT:                          __global float* arg1_buf, const ulong arg1_byte_offset,
// CL-NEXT:                          __global float* arg2_buf, const ulong arg2_byte_offset)
// CL-NEXT: {
// CL-NEXT:     __global float* arg0 = (__global float*)((__global char*)arg0_buf + arg0_byte_offset);
// CL-DAG:      __local float kernel_0_1_stage1[256];
// CL-DAG:      __local float kernel_0_1_stage0[256];
// CL:          int {{v[0-9]+}} = (int)get_local_id(0);
// CL:          int {{v[0-9]+}} = (int)get_group_id(0);
// CL:          barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);

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
