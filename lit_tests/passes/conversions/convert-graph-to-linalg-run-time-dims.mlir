// RUN: ziggurat-opt %s -p convert-graph-to-linalg | filecheck %s
// RUN: %if mlir-opt %{ ziggurat-opt %s -p convert-graph-to-linalg | mlir-opt --verify-each > /dev/null %}

// A `?` dim of a result is sized at run time: each tensor.empty takes the size of the input
// its loop indexes alone (tensor.dim), the product's rows from x, the sum's from the product.
// CHECK-LABEL: func.func @rows(%x: tensor<?x8xf32>) -> tensor<?x4xf32>
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[N:.*]] = tensor.dim %x, %[[C0]] : tensor<?x8xf32>
// CHECK-NEXT:    %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x4xf32>
// CHECK-NEXT:    %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-NEXT:    %[[P:.*]] = linalg.generic {{.*}} ins(%x, %{{.*}} : tensor<?x8xf32>, tensor<8x4xf32>) outs(%[[Z]] : tensor<?x4xf32>)
// CHECK:         %[[C0B:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[M:.*]] = tensor.dim %[[P]], %[[C0B]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[E2:.*]] = tensor.empty(%[[M]]) : tensor<?x4xf32>
// CHECK-NEXT:    %[[S:.*]] = linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<?x4xf32>, tensor<4xf32>) outs(%[[E2]] : tensor<?x4xf32>)
// CHECK:         func.return %[[S]] : tensor<?x4xf32>
func.func @rows(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %w = graph.constant dense<0.5> : tensor<8x4xf32>
  %b = graph.constant dense<1.0> : tensor<4xf32>
  %h = graph.matmul %x, %w : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %a = graph.add %h, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  func.return %a : tensor<?x4xf32>
}
