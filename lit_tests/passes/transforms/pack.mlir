// RUN: ziggurat-opt %s -p 'pack{operands=1}' | filecheck %s
// RUN: ziggurat-opt %s -p 'pack{operands=1},pack' | filecheck %s --check-prefix=OFF
// RUN: ziggurat-opt %s -p 'pack{operands=1},convert-linalg-to-loops{fuse=false}' | filecheck %s --check-prefix=LOOPS
// RUN: not ziggurat-opt %s -p 'pack{operands=2}' 2>&1 | filecheck %s --check-prefix=OUT
// RUN: not ziggurat-opt %s -p 'pack{operands=-1}' 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not ziggurat-opt %s -p 'pack{operands=1,1}' 2>&1 | filecheck %s --check-prefix=TWICE
// `pack` lists the operands whose cache-tile box is copied into a contiguous panel (printed only
// when set). Here B's 32 x 32 box (k tile x n tile) becomes a 1024-element stack panel, filled at
// the start of each innermost cache tile and read with vector loads.

// CHECK: #sched.schedule<tile = [16, 32, 32], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16, pack = [1]>
// OFF:   #sched.schedule<tile = [16, 32, 32], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>

// LOOPS:      %[[PANEL:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1024xf32>
// LOOPS:      scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOPS-NEXT:   scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOPS-NEXT:     scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOPS-NEXT:       scf.for %[[KK:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOPS-NEXT:         %[[ROW:.*]] = arith.addi %[[K]], %[[KK]] : index
// LOOPS-NEXT:         %[[SHIFT:.*]] = arith.muli %[[KK]], %{{.*}} : index
// LOOPS-NEXT:         scf.for %[[JJ:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOPS-NEXT:           %[[COL:.*]] = arith.addi %[[J]], %[[JJ]] : index
// LOOPS-NEXT:           %[[AT:.*]] = arith.addi %[[SHIFT]], %[[JJ]] : index
// LOOPS-NEXT:           %[[X:.*]] = memref.load %b[%[[ROW]], %[[COL]]] : memref<128x64xf32>
// LOOPS-NEXT:           memref.store %[[X]], %[[PANEL]][%[[AT]]] : memref<1024xf32>
// LOOPS:      vector.load %[[PANEL]][%{{.*}}] : memref<1024xf32>, vector<16xf32>
// LOOPS-NOT:  vector.load %b

// OUT:   error: pack: option 'operands': 2 is out of range; allowed: 0..1 (the kernel's inputs; only inputs can be packed)
// NEG:   error: pack: option 'operands': -1 is out of range; allowed: an input operand of the kernel (0, 1, ...)
// TWICE: error: pack: option 'operands': 1,1 names an operand twice
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>

func.func @matmul(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %c: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%c : memref<64x64xf32>)
      attrs = {sched.schedule = #sched.schedule<tile = [16, 32, 32], order = [0, 1, 2], unroll = [8, 32, 1], vector = 1, width = 16>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  func.return
}
