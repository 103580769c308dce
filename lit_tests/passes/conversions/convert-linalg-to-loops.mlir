// RUN: ziggurat-opt %s -p convert-linalg-to-loops | filecheck %s
// RUN: %if mlir-opt %{ ziggurat-opt %s -p convert-linalg-to-loops | mlir-opt --verify-each | filecheck %s --check-prefix=MLIR %}
// Each kernel carries an explicit #sched.schedule, so the loop nest does not depend on the host.
// The second RUN line checks that the loops level is valid upstream MLIR.

// MLIR-LABEL: func.func @matmul
// MLIR-LABEL: func.func @matmul_remainder
// MLIR-LABEL: func.func @scalar
// MLIR-LABEL: func.func @fill
// MLIR-LABEL: func.func @gather_scatter
// MLIR-NOT:   linalg.

// Register tile of 2 rows x 2 vectors: four vector<16xf32> accumulators loaded once, carried
// through the reduction loop as iter_args (broadcast A, load B, FMA), stored once after it.
// CHECK-LABEL: func.func @matmul(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %c: memref<8x32xf32>) {
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK:         scf.for %[[I:.*]] = %[[C0]] to %[[C8]] step %[[C2]] {
// CHECK-NEXT:      %[[C00:.*]] = vector.load %c[%[[I]], %[[C0]]] : memref<8x32xf32>, vector<16xf32>
// CHECK-NEXT:      %[[C01:.*]] = vector.load %c[%[[I]], %[[C16]]] : memref<8x32xf32>, vector<16xf32>
// CHECK-NEXT:      %[[I1:.*]] = arith.addi %[[I]], %[[C1]] : index
// CHECK-NEXT:      %[[C10:.*]] = vector.load %c[%[[I1]], %[[C0]]] : memref<8x32xf32>, vector<16xf32>
// CHECK-NEXT:      %[[I1B:.*]] = arith.addi %[[I]], %[[C1]] : index
// CHECK-NEXT:      %[[C11:.*]] = vector.load %c[%[[I1B]], %[[C16]]] : memref<8x32xf32>, vector<16xf32>
// CHECK-NEXT:      %[[R00:.*]], %[[R01:.*]], %[[R10:.*]], %[[R11:.*]] = scf.for %[[K:.*]] = %[[C0]] to %[[C16]] step %[[C1]] iter_args(%[[A00:.*]] = %[[C00]], %[[A01:.*]] = %[[C01]], %[[A10:.*]] = %[[C10]], %[[A11:.*]] = %[[C11]]) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-NEXT:        %[[X0:.*]] = memref.load %a[%[[I]], %[[K]]] : memref<8x16xf32>
// CHECK-NEXT:        %[[X0V:.*]] = vector.broadcast %[[X0]] : f32 to vector<16xf32>
// CHECK-NEXT:        %[[Y0:.*]] = vector.load %b[%[[K]], %[[C0]]] : memref<16x32xf32>, vector<16xf32>
// CHECK-NEXT:        %[[F00:.*]] = vector.fma %[[X0V]], %[[Y0]], %[[A00]] : vector<16xf32>
// CHECK-NEXT:        %[[Y1:.*]] = vector.load %b[%[[K]], %[[C16]]] : memref<16x32xf32>, vector<16xf32>
// CHECK-NEXT:        %[[F01:.*]] = vector.fma %[[X0V]], %[[Y1]], %[[A01]] : vector<16xf32>
// CHECK-NEXT:        %[[I1C:.*]] = arith.addi %[[I]], %[[C1]] : index
// CHECK-NEXT:        %[[X1:.*]] = memref.load %a[%[[I1C]], %[[K]]] : memref<8x16xf32>
// CHECK-NEXT:        %[[X1V:.*]] = vector.broadcast %[[X1]] : f32 to vector<16xf32>
// CHECK-NEXT:        %[[F10:.*]] = vector.fma %[[X1V]], %[[Y0]], %[[A10]] : vector<16xf32>
// CHECK-NEXT:        %[[F11:.*]] = vector.fma %[[X1V]], %[[Y1]], %[[A11]] : vector<16xf32>
// CHECK-NEXT:        scf.yield %[[F00]], %[[F01]], %[[F10]], %[[F11]] : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      vector.store %[[R00]], %c[%[[I]], %[[C0]]] : memref<8x32xf32>, vector<16xf32>
// CHECK-NEXT:      vector.store %[[R01]], %c[%[[I]], %[[C16]]] : memref<8x32xf32>, vector<16xf32>
// CHECK-NEXT:      %[[I1D:.*]] = arith.addi %[[I]], %[[C1]] : index
// CHECK-NEXT:      vector.store %[[R10]], %c[%[[I1D]], %[[C0]]] : memref<8x32xf32>, vector<16xf32>
// CHECK-NEXT:      vector.store %[[R11]], %c[%[[I1D]], %[[C16]]] : memref<8x32xf32>, vector<16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @matmul(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %c: memref<8x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [2, 32, 1], vector = 1, width = 16>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}

// Extents not divisible by the register tile: 5 rows = a loop over 2-row tiles + 1 row peeled,
// 24 columns = one 16-lane vector + a vector<8xf32> remainder; the reduction (4) is unrolled by 2
// inside a step-2 loop.
// CHECK-LABEL: func.func @matmul_remainder
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// 2-row tiles, first 16 columns
// CHECK:         scf.for %[[I:.*]] = %[[C0]] to %[[C4]] step %[[C2]] {
// CHECK:           scf.for %[[K:.*]] = %[[C0]] to %[[C4]] step %[[C2]] iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-4:     vector.fma {{.*}} : vector<16xf32>
// CHECK-NEXT:        scf.yield {{.*}} : vector<16xf32>, vector<16xf32>
// CHECK-NEXT:      }
// CHECK-COUNT-2:   vector.store {{.*}} : memref<5x24xf32>, vector<16xf32>
// 2-row tiles, the last 8 columns
// CHECK:           scf.for {{.*}} = %[[C0]] to %[[C4]] step %[[C2]] iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>) {
// CHECK:             vector.load %b[{{.*}}, %[[C16]]] : memref<4x24xf32>, vector<8xf32>
// CHECK-COUNT-4:     vector.fma {{.*}} : vector<8xf32>
// CHECK-NEXT:        scf.yield {{.*}} : vector<8xf32>, vector<8xf32>
// CHECK-NEXT:      }
// CHECK-COUNT-2:   vector.store {{.*}}, %c[{{.*}}, %[[C16]]] : memref<5x24xf32>, vector<8xf32>
// CHECK-NEXT:    }
// the peeled last row (row 4), both column blocks
// CHECK-NEXT:    %[[R4:.*]] = vector.load %c[%[[C4]], %[[C0]]] : memref<5x24xf32>, vector<16xf32>
// CHECK-NEXT:    %[[S4:.*]] = scf.for {{.*}} = %[[C0]] to %[[C4]] step %[[C2]] iter_args({{.*}} = %[[R4]]) -> (vector<16xf32>) {
// CHECK-COUNT-2:   vector.fma {{.*}} : vector<16xf32>
// CHECK:         vector.store %[[S4]], %c[%[[C4]], %[[C0]]] : memref<5x24xf32>, vector<16xf32>
// CHECK-NEXT:    %[[R4B:.*]] = vector.load %c[%[[C4]], %[[C16]]] : memref<5x24xf32>, vector<8xf32>
// CHECK-NEXT:    %[[S4B:.*]] = scf.for {{.*}} = %[[C0]] to %[[C4]] step %[[C2]] iter_args({{.*}} = %[[R4B]]) -> (vector<8xf32>) {
// CHECK-COUNT-2:   vector.fma {{.*}} : vector<8xf32>
// CHECK:         vector.store %[[S4B]], %c[%[[C4]], %[[C16]]] : memref<5x24xf32>, vector<8xf32>
// CHECK-NEXT:    func.return
func.func @matmul_remainder(%a: memref<5x4xf32>, %b: memref<4x24xf32>, %c: memref<5x24xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<5x4xf32>, memref<4x24xf32>) outs(%c : memref<5x24xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [2, 16, 2], vector = 1, width = 16>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}

// A scalar schedule (vector = -1): plain loads, a scalar math.fma, the accumulator as an f32
// iter_arg of the reduction loop.
// CHECK-LABEL: func.func @scalar
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK:         scf.for %[[I:.*]] = %[[C0]] to %[[C3]] step %[[C1]] {
// CHECK-NEXT:      scf.for %[[J:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:        %[[INIT:.*]] = memref.load %c[%[[I]], %[[J]]] : memref<3x4xf32>
// CHECK-NEXT:        %[[SUM:.*]] = scf.for %[[K:.*]] = %[[C0]] to %[[C2]] step %[[C1]] iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NEXT:          %[[X:.*]] = memref.load %a[%[[I]], %[[K]]] : memref<3x2xf32>
// CHECK-NEXT:          %[[Y:.*]] = memref.load %b[%[[K]], %[[J]]] : memref<2x4xf32>
// CHECK-NEXT:          %[[F:.*]] = math.fma %[[X]], %[[Y]], %[[ACC]] : f32
// CHECK-NEXT:          scf.yield %[[F]] : f32
// CHECK-NEXT:        }
// CHECK-NEXT:        memref.store %[[SUM]], %c[%[[I]], %[[J]]] : memref<3x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @scalar(%a: memref<3x2xf32>, %b: memref<2x4xf32>, %c: memref<3x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<3x2xf32>, memref<2x4xf32>) outs(%c : memref<3x4xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [0, 0, 0], order = [0, 1, 2], unroll = [1, 1, 1], vector = -1, width = 1>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}

// linalg.fill (its schedule attribute is honoured): a splat constant stored two vectors per row.
// CHECK-LABEL: func.func @fill
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[ZV:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK:         scf.for %[[I:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:      vector.store %[[ZV]], %c[%[[I]], %[[C0]]] : memref<4x32xf32>, vector<16xf32>
// CHECK-NEXT:      vector.store %[[ZV]], %c[%[[I]], %[[C16]]] : memref<4x32xf32>, vector<16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @fill(%c: memref<4x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill {sched.schedule = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 32], vector = 1, width = 16>} ins(%zero : f32) outs(%c : memref<4x32xf32>)
  func.return
}

// Vectorizing a loop with stride 4 in memory: a flat 1-D view of each buffer
// (memref.reinterpret_cast) and a one-vector stack scratch (memref.alloca); a gather is a lane loop
// loading strided elements into the scratch, then one vector.load; a scatter is one vector.store
// into the scratch, then a lane loop storing strided elements. The body runs on vector<4xf32>.
// CHECK-LABEL: func.func @gather_scatter
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[XF:.*]] = memref.reinterpret_cast %x to offset: [0], sizes: [32], strides: [1] : memref<8x4xf32> to memref<32xf32>
// CHECK-DAG:     %[[S:.*]] = memref.alloca() {alignment = 64 : i64} : memref<4xf32>
// CHECK-DAG:     %[[YF:.*]] = memref.reinterpret_cast %y to offset: [0], sizes: [32], strides: [1] : memref<8x4xf32> to memref<32xf32>
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK:         scf.for %[[I:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:      scf.for %[[J:.*]] = %[[C0]] to %[[C8]] step %[[C4]] {
// CHECK-NEXT:        %[[JS:.*]] = arith.muli %[[J]], %[[C4]] : index
// CHECK-NEXT:        %[[L0:.*]] = arith.addi %[[I]], %[[JS]] : index
// CHECK-NEXT:        scf.for %[[G:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:          %[[GS:.*]] = arith.muli %[[G]], %[[C4]] : index
// CHECK-NEXT:          %[[GL:.*]] = arith.addi %[[L0]], %[[GS]] : index
// CHECK-NEXT:          %[[X:.*]] = memref.load %[[XF]][%[[GL]]] : memref<32xf32>
// CHECK-NEXT:          memref.store %[[X]], %[[S]][%[[G]]] : memref<4xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:        %[[V:.*]] = vector.load %[[S]][%[[C0]]] : memref<4xf32>, vector<4xf32>
// CHECK-NEXT:        %[[E:.*]] = math.exp %[[V]] : vector<4xf32>
// CHECK-NEXT:        vector.store %[[E]], %[[S]][%[[C0]]] : memref<4xf32>, vector<4xf32>
// CHECK-NEXT:        scf.for %[[P:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:          %[[PS:.*]] = arith.muli %[[P]], %[[C4]] : index
// CHECK-NEXT:          %[[PL:.*]] = arith.addi %[[L0]], %[[PS]] : index
// CHECK-NEXT:          %[[Y:.*]] = memref.load %[[S]][%[[P]]] : memref<4xf32>
// CHECK-NEXT:          memref.store %[[Y]], %[[YF]][%[[PL]]] : memref<32xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @gather_scatter(%x: memref<8x4xf32>, %y: memref<8x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (j, i)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x4xf32>) outs(%y : memref<8x4xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 4], vector = 1, width = 4>} {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  func.return
}
