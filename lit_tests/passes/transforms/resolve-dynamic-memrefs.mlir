// RUN: ziggurat-opt %s --split-input-file -p resolve-dynamic-memrefs | filecheck %s
// RUN: %if mlir-opt %{ ziggurat-opt %s --split-input-file -p resolve-dynamic-memrefs | mlir-opt --split-input-file --verify-each > /dev/null %}

// Each `?` dim of a memref argument becomes one more index argument; memref.dim folds to it;
// a load through `?` strides goes through the 1-D view of the argument at i * cols + j.
// CHECK-LABEL: func.func @copy(
// CHECK-SAME:    %a: memref<?x?xf32>, %b: memref<?x?xf32>,
// CHECK-SAME:    %[[AR:.*]]: index {ziggurat.size_of = "0.0"}, %[[AC:.*]]: index {ziggurat.size_of = "0.1"},
// CHECK-SAME:    %[[BR:.*]]: index {ziggurat.size_of = "1.0"}, %[[BC:.*]]: index {ziggurat.size_of = "1.1"})
// CHECK-NEXT:    %[[AN:.*]] = arith.muli %[[AR]], %[[AC]] : index
// CHECK-NEXT:    %[[A1:.*]] = memref.reinterpret_cast %a to offset: [0], sizes: [%[[AN]]], strides: [1] : memref<?x?xf32> to memref<?xf32>
// CHECK-NEXT:    %[[BN:.*]] = arith.muli %[[BR]], %[[BC]] : index
// CHECK-NEXT:    %[[B1:.*]] = memref.reinterpret_cast %b to offset: [0], sizes: [%[[BN]]], strides: [1] : memref<?x?xf32> to memref<?xf32>
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[AR]] step
// CHECK-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %[[AC]] step
// CHECK-NEXT:        %[[RA:.*]] = arith.muli %[[I]], %[[AC]] : index
// CHECK-NEXT:        %[[LA:.*]] = arith.addi %[[RA]], %[[J]] : index
// CHECK-NEXT:        %[[X:.*]] = memref.load %[[A1]][%[[LA]]] : memref<?xf32>
// CHECK-NEXT:        %[[RB:.*]] = arith.muli %[[I]], %[[BC]] : index
// CHECK-NEXT:        %[[LB:.*]] = arith.addi %[[RB]], %[[J]] : index
// CHECK-NEXT:        memref.store %[[X]], %[[B1]][%[[LB]]] : memref<?xf32>
func.func @copy(%a: memref<?x?xf32>, %b: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %a, %c0 : memref<?x?xf32>
  %n = memref.dim %a, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %x = memref.load %a[%i, %j] : memref<?x?xf32>
      memref.store %x, %b[%i, %j] : memref<?x?xf32>
    }
  }
  func.return
}

// -----

// Only the outer dim run-time: the strides stay static, so the accesses are left as they are;
// the dim is the size argument and the alloc takes it.
// CHECK-LABEL: func.func @rows(
// CHECK-SAME:    %x: memref<?x64xf32>, %[[N:.*]]: index {ziggurat.size_of = "0.0"})
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %[[T:.*]] = memref.alloc(%[[N]]) : memref<?x64xf32>
// CHECK-NEXT:    %[[V:.*]] = vector.load %x[%c0, %c0] : memref<?x64xf32>, vector<16xf32>
// CHECK-NEXT:    vector.store %[[V]], %[[T]][%c0, %c0] : memref<?x64xf32>, vector<16xf32>
func.func @rows(%x: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %t = memref.alloc(%n) : memref<?x64xf32>
  %v = vector.load %x[%c0, %c0] : memref<?x64xf32>, vector<16xf32>
  vector.store %v, %t[%c0, %c0] : memref<?x64xf32>, vector<16xf32>
  memref.dealloc %t : memref<?x64xf32>
  func.return
}

// -----

// A call passes the sizes of what it passes: the callee's size arguments come after its own.
// CHECK-LABEL: func.func private @kernel(
// CHECK-SAME:    memref<?x8xf32>, index, index)
// CHECK-LABEL: func.func @caller(
// CHECK-SAME:    %x: memref<?x8xf32>, %[[N:.*]]: index {ziggurat.size_of = "0.0"})
// CHECK:         func.call @kernel(%x, %{{.*}}, %[[N]]) : (memref<?x8xf32>, index, index) -> ()
func.func private @kernel(memref<?x8xf32>, index)
func.func @caller(%x: memref<?x8xf32>) {
  %c3 = arith.constant 3 : index
  func.call @kernel(%x, %c3) : (memref<?x8xf32>, index) -> ()
  func.return
}

// -----

// A subview at run-time offsets and a collapse: offset r0 * cols + c0, stride 2 along a row.
// CHECK-LABEL: func.func @window(
// CHECK-SAME:    %x: memref<?x?xf32>, %r0: index, %c0: index, %y: memref<4x4xf32>, %[[R:.*]]: index {ziggurat.size_of = "0.0"}, %[[C:.*]]: index {ziggurat.size_of = "0.1"})
// CHECK:         %[[X1:.*]] = memref.reinterpret_cast %x to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x?xf32> to memref<?xf32>
// CHECK-NEXT:    %[[ROW:.*]] = arith.muli %r0, %[[C]] : index
// CHECK-NEXT:    %[[OFF:.*]] = arith.addi %[[ROW]], %c0 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[SR:.*]] = arith.muli %[[C]], %[[STEP]] : index
// CHECK-NOT:     memref.subview
// element (1, 2): offset + 1 * (2 * cols) + 2 * 1
// CHECK:         %[[L1:.*]] = arith.addi %[[OFF]], %[[SR]] : index
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[L2:.*]] = arith.addi %[[L1]], %[[TWO]] : index
// CHECK-NEXT:    %[[V:.*]] = memref.load %[[X1]][%[[L2]]] : memref<?xf32>
// CHECK-NEXT:    memref.store %[[V]], %y[
func.func @window(%x: memref<?x?xf32>, %r0: index, %c0: index, %y: memref<4x4xf32>) {
  %sub = memref.subview %x[%r0, %c0] [4, 4] [2, 1] : memref<?x?xf32> to memref<4x4xf32, strided<[?, 1], offset: ?>>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %v = memref.load %sub[%c1, %c2] : memref<4x4xf32, strided<[?, 1], offset: ?>>
  memref.store %v, %y[%c1, %c2] : memref<4x4xf32>
  func.return
}
