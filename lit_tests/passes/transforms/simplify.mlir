// RUN: ziggurat-opt %s -p simplify | filecheck %s

// identity, dropout, cast f32->f32, same-shape reshape/flatten/squeeze/unsqueeze, identity
// transpose and zero pads all disappear.
// CHECK-LABEL: func.func @noops(%x: tensor<2x3xf32>)
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
func.func @noops(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.identity %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.dropout %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.cast %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.reshape %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = graph.flatten %3 {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = graph.squeeze %4 {axes = array<i64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = graph.unsqueeze %5 {axes = array<i64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = graph.transpose %6 {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = graph.pad %7 {pads = array<i64: 0, 0, 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %8 : tensor<2x3xf32>
}

// A cast from i64 is not a no-op.
// CHECK-LABEL: func.func @real_cast
// CHECK:         graph.cast
func.func @real_cast(%x: tensor<2xi64>) -> tensor<2xf32> {
  %0 = graph.cast %x : (tensor<2xi64>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// transpose of transpose: inverse perms cancel, others compose into one.
// CHECK-LABEL: func.func @transposes
// CHECK-NEXT:    %{{.*}} = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %x, %{{.*}} : tensor<2x3x4xf32>, tensor<4x2x3xf32>
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  %0 = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = graph.transpose %0 {perm = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  %2 = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %3 = graph.transpose %2 {perm = array<i64: 2, 1, 0>} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  func.return %1, %3 : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// reshape of a reshape (or flatten) is one reshape; a second user keeps the first.
// CHECK-LABEL: func.func @reshapes
// CHECK-NEXT:    %{{.*}} = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %[[F:.*]] = graph.flatten %x
// CHECK-NEXT:    %{{.*}} = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:    func.return
func.func @reshapes(%x: tensor<2x3x4xf32>) -> (tensor<4x6xf32>, tensor<2x12xf32>, tensor<24xf32>) {
  %0 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = graph.reshape %0 : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %2 = graph.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %3 = graph.reshape %2 : (tensor<2x12xf32>) -> tensor<24xf32>
  func.return %1, %2, %3 : tensor<4x6xf32>, tensor<2x12xf32>, tensor<24xf32>
}

// x*1, 1*x, x+0, x-0, x/1 go; the neutral constants too.
// CHECK-LABEL: func.func @neutral(%x: tensor<2x3xf32>)
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
func.func @neutral(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %one = graph.constant dense<1.0> : tensor<3xf32>
  %zero = graph.constant dense<0.0> : tensor<1x1xf32>
  %0 = graph.mul %x, %one : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.mul %one, %0 : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.add %1, %zero : (tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
  %3 = graph.sub %2, %zero : (tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
  %4 = graph.div %3, %one : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %4 : tensor<2x3xf32>
}

// Kept: x*1 where broadcasting grows x, 0-x, 1/x, x*c with c not all ones, nonzero pads.
// CHECK-LABEL: func.func @kept
// CHECK:         graph.mul %x, %ones
// CHECK:         graph.sub %zero, %x
// CHECK:         graph.div %ones3, %x
// CHECK:         graph.mul %x, %c
// CHECK:         graph.pad
func.func @kept(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<5xf32>) {
  %ones = graph.constant dense<1.0> : tensor<2x3xf32>
  %ones3 = graph.constant dense<1.0> : tensor<3xf32>
  %zero = graph.constant dense<0.0> : tensor<3xf32>
  %c = graph.constant dense<[1.0, 2.0, 1.0]> : tensor<3xf32>
  %0 = graph.mul %x, %ones : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.sub %zero, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = graph.div %ones3, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %3 = graph.mul %x, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = graph.pad %x {pads = array<i64: 1, 1>} : (tensor<3xf32>) -> tensor<5xf32>
  func.return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<5xf32>
}
