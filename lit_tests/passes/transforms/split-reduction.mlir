// RUN: ziggurat-opt %s -p 'split-reduction{threads=8}' | filecheck %s
// RUN: ziggurat-opt %s -p 'split-reduction{threads=8},split-reduction{threads=1}' | filecheck %s --check-prefix=OFF
// RUN: ziggurat-opt %s -p 'split-reduction{threads=8},convert-linalg-to-gpu{target=cuda}' | filecheck %s --check-prefix=GPU
// RUN: %if mlir-opt %{ ziggurat-opt %s -p 'split-reduction{threads=8},convert-linalg-to-gpu{target=cuda}' | mlir-opt --verify-each | filecheck %s --check-prefix=MLIR %}
// RUN: not ziggurat-opt %s -p 'split-reduction{threads=3}' 2>&1 | filecheck %s --check-prefix=DIVIDE
// RUN: not ziggurat-opt %s -p 'split-reduction{threads=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not ziggurat-opt %s -p 'split-reduction{threads=8},convert-linalg-to-loops' 2>&1 | filecheck %s --check-prefix=CPU
// `split-reduction` lets 8 GPU threads share each row sum of a 4 x 256 input (a softmax or
// layer-norm row): lane r adds x[i, r], x[i, r + 8], ...; the 8 partials meet in workgroup
// memory (a tree of 4 then 2 lanes between barriers) and lane 0 adds the last pair, folds in
// the initial value and stores. The vector loop and the 16-deep reduction tile the kernel had
// are dropped: a split reduction is scalar and runs whole.

// CHECK: #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 4], vector = -1, width = 1, split = 8>
// OFF:   #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 4], vector = -1, width = 1>

// GPU:       "gpu.launch_func"({{.*}}) <{kernel = @kernels::@rows
// GPU:       "memref.global"() <{sym_name = "rows_partials", type = memref<32xf32, 3 : i64>
// GPU-LABEL: "gpu.func"()
// GPU:         %[[P:.*]] = memref.get_global @rows_partials : memref<32xf32, 3 : i64>
// GPU:         %[[T:.*]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// GPU:         %[[LANE:.*]] = arith.remui %[[T]], %{{.*}} : index
// GPU:         %[[ROW:.*]] = arith.divui %[[T]], %{{.*}} : index
// GPU:         %[[IDENTITY:.*]] = arith.constant 0.000000e+00 : f32
// GPU:         scf.for %[[J:.*]] = %[[LANE]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[IDENTITY]])
// GPU:           memref.load %x[%[[ROW]], %[[J]]]
// GPU:         memref.store %{{.*}}, %[[P]][%[[SLOT:.*]]] : memref<32xf32, 3 : i64>
// GPU-NEXT:    "gpu.barrier"()
// GPU:         %[[FOUR:.*]] = arith.cmpi ult, %[[LANE]], %{{.*}} : index
// GPU-NEXT:    scf.if %[[FOUR]] {
// GPU:           arith.addf
// GPU:         "gpu.barrier"()
// GPU:         scf.if
// GPU:         "gpu.barrier"()
// GPU:         %[[FIRST:.*]] = arith.cmpi ult, %[[LANE]], %{{.*}} : index
// GPU-NEXT:    scf.if %[[FIRST]] {
// GPU:           memref.store %{{.*}}, %y[%[[ROW]]] : memref<4xf32>
// GPU-NOT:     "gpu.barrier"()
// GPU:         "gpu.return"()

// MLIR: gpu.module @kernels
// MLIR: gpu.barrier

// DIVIDE: error: split-reduction: split = 3 does not divide loop 1 (the innermost reduction loop of the order, 256 iterations)
// ZERO:   error: split-reduction: option 'threads': 0 is out of range; allowed: a thread count (1, 2, ...)
// CPU:    error: convert-linalg-to-loops: split = 8 is a GPU knob (threads sharing a reduction); on the CPU each output's reduction runs on one thread (split = 1)

func.func private @rows(%x: memref<4x256xf32>, %y: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : memref<4xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x256xf32>) outs(%y : memref<4xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [0, 16], order = [0, 1], unroll = [4, 4], vector = 0, width = 4>} {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  func.return
}

func.func @main(%x: memref<4x256xf32>, %y: memref<4xf32>) {
  func.call @rows(%x, %y) : (memref<4x256xf32>, memref<4xf32>) -> ()
  func.return
}
