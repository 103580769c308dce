// RUN: ziggurat-opt %s -p convert-parallel-to-runtime | filecheck %s
// RUN: ziggurat-opt %s -p 'convert-parallel-to-runtime,convert-scf-to-cf,convert-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts' | filecheck %s --check-prefix=LLVM

// A 2-D scf.parallel (3 x 4 iterations) becomes one runtime call over the collapsed space of 12;
// the memref and the index argument travel through ctx slots, the constant and the alloca (per
// thread scratch) are rebuilt in the outlined body, which delinearizes the collapsed index.

// CHECK-LABEL: func.func @scale(
// CHECK-SAME:    %[[X:.*]]: memref<6x8xf32>, %[[OFF:.*]]: index)
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[CTX:.*]] = llvm.alloca %[[N]] x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK-NOT:     memref.alloca
// CHECK:         %[[OFFI:.*]] = arith.index_cast %[[OFF]] : index to i64
// CHECK-NEXT:    %[[S0:.*]] = llvm.getelementptr %[[CTX]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.store %[[OFFI]], %[[S0]] : i64, !llvm.ptr
// CHECK-NEXT:    %[[XP:.*]] = builtin.unrealized_conversion_cast %[[X]] : memref<6x8xf32> to !llvm.ptr
// CHECK-NEXT:    %[[S1:.*]] = llvm.getelementptr %[[CTX]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.store %[[XP]], %[[S1]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[FN:.*]] = llvm.mlir.addressof @scale_parallel0 : !llvm.ptr
// CHECK-NEXT:    %[[COUNT:.*]] = llvm.mlir.constant(12) : i64
// CHECK-NEXT:    llvm.call @zrt_parallel_for(%[[FN]], %[[CTX]], %[[COUNT]]) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK-NEXT:    func.return

// CHECK-LABEL: func.func private @scale_parallel0(
// CHECK-SAME:    %[[BEGIN:.*]]: index, %[[END:.*]]: index, %[[C:.*]]: !llvm.ptr)
// CHECK-NEXT:    %[[TWOI:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[P0:.*]] = llvm.getelementptr %[[C]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[OFFL:.*]] = llvm.load %[[P0]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[OFFB:.*]] = arith.index_cast %[[OFFL]] : i64 to index
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr %[[C]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[XL:.*]] = llvm.load %[[P1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[XB:.*]] = builtin.unrealized_conversion_cast %[[XL]] : !llvm.ptr to memref<6x8xf32>
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    %[[SCR:.*]] = memref.alloca() : memref<2xf32>
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:    scf.for %[[L:.*]] = %[[BEGIN]] to %[[END]] step %[[ONE]] {
// CHECK-NEXT:      %[[Q0:.*]] = arith.divui %[[L]], %[[FOUR]] : index
// CHECK-NEXT:      %[[I:.*]] = arith.muli %[[Q0]], %[[TWOI]] : index
// CHECK-NEXT:      %[[Q1:.*]] = arith.remui %[[L]], %[[FOUR]] : index
// CHECK-NEXT:      %[[J:.*]] = arith.muli %[[Q1]], %[[TWOI]] : index
// CHECK-NEXT:      %[[JJ:.*]] = arith.addi %[[J]], %[[OFFB]] : index
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[XB]][%[[I]], %[[JJ]]] : memref<6x8xf32>
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[V]], %[[TWO]] : f32
// CHECK-NEXT:      memref.store %[[M]], %[[SCR]][%[[Z]]] : memref<2xf32>
// CHECK-NEXT:      %[[R:.*]] = memref.load %[[SCR]][%[[Z]]] : memref<2xf32>
// CHECK-NEXT:      memref.store %[[R]], %[[XB]][%[[I]], %[[J]]] : memref<6x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// CHECK: llvm.func @zrt_parallel_for(!llvm.ptr, !llvm.ptr, i64)

// LLVM-LABEL: llvm.func @scale(
// LLVM:         llvm.call @zrt_parallel_for
// LLVM-LABEL: llvm.func internal @scale_parallel0(
// LLVM-SAME:    i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr)

func.func @scale(%x: memref<6x8xf32>, %off: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  %scratch = memref.alloca() : memref<2xf32>
  // (xDSL 0.74 has no custom syntax for scf.parallel: generic form)
  "scf.parallel"(%c0, %c0, %c6, %c8, %c2, %c2) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %jj = arith.addi %j, %off : index
    %v = memref.load %x[%i, %jj] : memref<6x8xf32>
    %m = arith.mulf %v, %two : f32
    memref.store %m, %scratch[%c0] : memref<2xf32>
    %r = memref.load %scratch[%c0] : memref<2xf32>
    memref.store %r, %x[%i, %j] : memref<6x8xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}
