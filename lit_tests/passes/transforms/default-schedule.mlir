// RUN: ziggurat-opt %s -p 'default-schedule{cpu=znver4}' | filecheck %s
// RUN: ziggurat-opt %s -p 'default-schedule{cpu=znver5}' | filecheck %s --check-prefix=ZEN5
// RUN: ziggurat-opt %s -p 'default-schedule{cpu=x86-64-v3}' | filecheck %s --check-prefix=AVX2
// RUN: ziggurat-opt %s -p 'default-schedule{cpu=znver4 width=8}' | filecheck %s --check-prefix=W8
// RUN: not ziggurat-opt %s -p 'default-schedule{cpu=zen9}' 2>&1 | filecheck %s --check-prefix=CPU
// CPU: error: default-schedule: option 'cpu': unknown CPU 'zen9' (known: host, znver4, znver5, x86-64-v3)
// RUN: not ziggurat-opt %s -p 'default-schedule{width=65}' 2>&1 | filecheck %s --check-prefix=WIDTH
// RUN: not ziggurat-opt %s -p 'default-schedule{width=-1}' 2>&1 | filecheck %s --check-prefix=WIDTH
// WIDTH: error: default-schedule: option 'width': {{65|-1}} is out of range; allowed: 1..64 (omit it for the host CPU's widest)
// The analytic default schedule of each kernel kind, derived from a CPU's description
// (passes/schedule/cpu_target.py); `cpu` pins one so that the output does not depend on the host.
// An AVX2 core has 16 vector registers: half of them (8) hold accumulators.

// Matmul: vectorize j (B and C are contiguous along it, A is invariant), a register tile of
// 8 rows x 2 vectors (16 accumulators: half of AVX-512's 32 registers), the reduction innermost.
// CHECK-LABEL: func.func @matmul
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>
// AVX2-LABEL:  func.func @matmul
// AVX2:        sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [4, 16, 1], vector = 1, width = 8>
// Zen 4 restricted to 8 lanes keeps its 32 registers (AVX-512VL): 16 accumulators.
// W8-LABEL:    func.func @matmul
// W8:          sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 16, 1], vector = 1, width = 8>
func.func @matmul(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %c: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%c : memref<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}

// A large matmul: the reduction is tiled so that A's 8-row strip stays in half the L1 (8 x 512
// f32 = 16 KiB of Zen 4's 32). B's 512 x 256 tile would fit half the L2, but its rows are 4 KiB
// apart and land in a quarter of the L2's sets, 16 lines in each where there are 8 ways: it
// cannot stay. So B is packed into a contiguous panel, its vector-loop tile narrowed to 64 (two
// register tiles) for the panel's 32K-element bound. Zen 5 (48 KiB L1, 16-way L2) comes to the
// same. The AVX2 core (4 x 2 vectors) reuses a 4-row strip: all 1024 reduction steps fit half
// its L1, and B's 1024 x 32 panel keeps two register tiles.
// CHECK-LABEL: func.func @matmul_large
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 64, 512], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16, pack = [1]>
// ZEN5-LABEL:  func.func @matmul_large
// ZEN5:        sched.schedule = #sched.schedule<tile = [0, 64, 512], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16, pack = [1]>
// AVX2-LABEL:  func.func @matmul_large
// AVX2:        sched.schedule = #sched.schedule<tile = [0, 32, 0], order = [0, 1, 2], unroll = [4, 16, 1], vector = 1, width = 8, pack = [1]>
func.func @matmul_large(%a: memref<512x1024xf32>, %b: memref<1024x1024xf32>, %c: memref<512x1024xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<512x1024xf32>, memref<1024x1024xf32>) outs(%c : memref<512x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}

// A conv-like kernel (NCHW, 3x3 window): vectorize the output column x (8 lanes used of 16),
// register-tile 4 filters f x 4 output rows y (each input row vector is reused by 4 filters,
// each weight broadcast by 4 rows: 8 loads for 16 accumulators; the 16 filters alone would take
// 17, more loads than FMAs, and 8 rows alone 9 for 8), reductions (c, ky, kx) innermost.
// CHECK-LABEL: func.func @conv
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0, 0, 0, 0, 0, 0], order = [0, 1, 2, 3, 4, 5, 6], unroll = [1, 4, 4, 16, 1, 1, 3], vector = 3, width = 16>
func.func @conv(%in: memref<1x8x10x10xf32>, %w: memref<16x8x3x3xf32>, %out: memref<1x16x8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(n, f, y, x, c, ky, kx) -> (n, c, y + ky, x + kx)>, affine_map<(n, f, y, x, c, ky, kx) -> (f, c, ky, kx)>, affine_map<(n, f, y, x, c, ky, kx) -> (n, f, y, x)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%in, %w : memref<1x8x10x10xf32>, memref<16x8x3x3xf32>) outs(%out : memref<1x16x8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}

// Elementwise: vectorize the contiguous loop, 4 vectors per step, no reduction to tile.
// CHECK-LABEL: func.func @relu
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 64], vector = 1, width = 16>
// AVX2-LABEL:  func.func @relu
// AVX2:        sched.schedule = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 32], vector = 1, width = 8>
func.func @relu(%x: memref<4x100xf32>, %y: memref<4x100xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x100xf32>) outs(%y : memref<4x100xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %in, %z : f32
    linalg.yield %r : f32
  }
  func.return
}

// linalg.index on the contiguous loop j: j cannot be vector lanes, and the other loop would be
// a gather, so the kernel stays scalar.
// CHECK-LABEL: func.func @index_on_inner
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 1], vector = -1, width = 1>
func.func @index_on_inner(%x: memref<8x32xf32>, %y: memref<8x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x32xf32>) outs(%y : memref<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %j = linalg.index 1 : index
    %c0 = arith.constant 0 : index
    %z = arith.constant 0.0 : f32
    %first = arith.cmpi eq, %j, %c0 : index
    %r = arith.select %first, %z, %in : f32
    linalg.yield %r : f32
  }
  func.return
}

// The same body on a transposed layout: loop i is contiguous and free of linalg.index, so it
// is the vector loop (j, which the body indexes, stays scalar).
// CHECK-LABEL: func.func @index_on_outer
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [16, 1], vector = 0, width = 16>
func.func @index_on_outer(%x: memref<32x16xf32>, %y: memref<32x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (j, i)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<32x16xf32>) outs(%y : memref<32x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %j = linalg.index 1 : index
    %c0 = arith.constant 0 : index
    %z = arith.constant 0.0 : f32
    %first = arith.cmpi eq, %j, %c0 : index
    %r = arith.select %first, %z, %in : f32
    linalg.yield %r : f32
  }
  func.return
}

// A kernel that already has a schedule keeps it.
// CHECK-LABEL: func.func @scheduled
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0], order = [1, 0], unroll = [2, 1], vector = -1, width = 1>
func.func @scheduled(%x: memref<4x100xf32>, %y: memref<4x100xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x100xf32>) outs(%y : memref<4x100xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [0, 0], order = [1, 0], unroll = [2, 1], vector = -1, width = 1>} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  func.return
}

// A 768-long reduction: A's 8-row strip of it (24 KiB) is more than half of Zen 4's 32 KiB L1,
// so the reduction is tiled (384 divides 768); Zen 5's 48 KiB L1 keeps it whole.
// CHECK-LABEL: func.func @matmul_k768
// CHECK:       sched.schedule = #sched.schedule<tile = [0, 0, 384], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>
// ZEN5-LABEL:  func.func @matmul_k768
// ZEN5:        sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>
func.func @matmul_k768(%a: memref<64x768xf32>, %b: memref<768x64xf32>, %c: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x768xf32>, memref<768x64xf32>) outs(%c : memref<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}
