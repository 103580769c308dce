// RUN: not ziggurat-opt %s -p convert-parallel-to-runtime 2>&1 | filecheck %s
// Loops whose trip count is not known at compile time are not outlined (ziggurat's never are).

// CHECK: error: convert-parallel-to-runtime: scf.parallel needs constant bounds and steps (an upper bound is not a constant)
func.func @dynamic(%x: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "scf.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
