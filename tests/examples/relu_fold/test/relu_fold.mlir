// RUN: ziggurat-opt %s -p relu-fold | filecheck %s
// RUN: xdsl-opt %s -p 'relu-fold{func=main}' | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = graph.relu %x
// CHECK-NEXT:    func.return %[[R]], %[[R]]
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  %c = graph.relu %b : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c, %b : tensor<4xf32>, tensor<4xf32>
}
