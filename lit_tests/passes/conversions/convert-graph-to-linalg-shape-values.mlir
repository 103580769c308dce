// RUN: ziggurat-opt %s -p convert-graph-to-linalg | filecheck %s
// RUN: %if mlir-opt %{ ziggurat-opt %s -p convert-graph-to-linalg | mlir-opt --verify-each > /dev/null %}

// Shape arithmetic on run-time sizes: graph.shape reads each `?` dim (tensor.dim) into its slot,
// graph.range reads its bounds (tensor.extract) and sizes its result from them.
// CHECK-LABEL: func.func @positions(%x: tensor<?x?xi64>) -> tensor<?xi64>
// CHECK:         %[[S:.*]] = tensor.empty() : tensor<2xi64>
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[D0:.*]] = tensor.dim %x, %[[C0]] : tensor<?x?xi64>
// CHECK-NEXT:    %[[I0:.*]] = arith.index_cast %[[D0]] : index to i64
// CHECK:         %[[F0:.*]] = linalg.fill ins(%[[I0]] : i64) outs(%{{.*}} : tensor<1xi64>) -> tensor<1xi64>
// CHECK-NEXT:    %[[S0:.*]] = tensor.insert_slice %[[F0]] into %[[S]][0] [1] [1] : tensor<1xi64> into tensor<2xi64>
// CHECK:         tensor.insert_slice %{{.*}} into %[[S0]][1] [1] [1] : tensor<1xi64> into tensor<2xi64>
// CHECK:         %[[START:.*]] = tensor.extract %zero[] : tensor<i64>
// CHECK-NEXT:    %[[LIMIT:.*]] = tensor.extract %{{.*}}[] : tensor<i64>
// CHECK-NEXT:    %[[DELTA:.*]] = tensor.extract %one[] : tensor<i64>
// CHECK:         %[[SPAN:.*]] = arith.subi %[[LIMIT]], %[[START]] : i64
// CHECK:         %[[Q:.*]] = arith.divsi %{{.*}}, %[[DELTA]] : i64
// CHECK-NEXT:    %[[COUNT:.*]] = arith.maxsi %[[Q]], %{{.*}} : i64
// CHECK-NEXT:    %[[N:.*]] = arith.index_cast %[[COUNT]] : i64 to index
// CHECK-NEXT:    %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?xi64>
// CHECK-NEXT:    %[[R:.*]] = linalg.generic {{.*}} ins(%zero, %one : tensor<i64>, tensor<i64>) outs(%[[E]] : tensor<?xi64>)
// CHECK:           %[[K:.*]] = linalg.index 0 : index
// CHECK-NEXT:      %[[KI:.*]] = arith.index_cast %[[K]] : index to i64
// CHECK-NEXT:      %[[STEP:.*]] = arith.muli %[[KI]], %{{.*}} : i64
// CHECK-NEXT:      %[[V:.*]] = arith.addi %{{.*}}, %[[STEP]] : i64
// CHECK-NEXT:      linalg.yield %[[V]] : i64
// CHECK:         func.return %[[R]] : tensor<?xi64>
func.func @positions(%x: tensor<?x?xi64>) -> tensor<?xi64> {
  %s = graph.shape %x : (tensor<?x?xi64>) -> tensor<2xi64>
  %i = graph.constant dense<1> : tensor<i64>
  %n = graph.gather %s, %i : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %zero = graph.constant dense<0> : tensor<i64>
  %one = graph.constant dense<1> : tensor<i64>
  %r = graph.range %zero, %n, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  func.return %r : tensor<?xi64>
}

// A KV cache grows along a run-time axis: the result is as long as both inputs together, and
// each position reads the input that holds it (an empty past is read at its first element only,
// and never selected).
// CHECK-LABEL: func.func @cache(%past: tensor<1x2x?x4xf32>, %new: tensor<1x2x?x4xf32>)
// CHECK:         %[[P:.*]] = tensor.dim %past, %{{.*}} : tensor<1x2x?x4xf32>
// CHECK:         %[[Q:.*]] = tensor.dim %new, %{{.*}} : tensor<1x2x?x4xf32>
// CHECK-NEXT:    %[[T:.*]] = arith.addi %[[P]], %[[Q]] : index
// CHECK-NEXT:    %[[E:.*]] = tensor.empty(%[[T]]) : tensor<1x2x?x4xf32>
// CHECK-NEXT:    %{{.*}} = linalg.generic {{.*}} outs(%[[E]] : tensor<1x2x?x4xf32>)
// CHECK:           %[[J:.*]] = linalg.index 2 : index
// CHECK:           %[[PL:.*]] = tensor.dim %past, %{{.*}} : tensor<1x2x?x4xf32>
// CHECK:           %[[EMPTY:.*]] = arith.cmpi eq, %[[PL]], %{{.*}} : index
// CHECK:           %[[A:.*]] = tensor.extract %past[{{.*}}] : tensor<1x2x?x4xf32>
// CHECK:           %[[B:.*]] = tensor.extract %new[{{.*}}] : tensor<1x2x?x4xf32>
// CHECK-NEXT:      %[[BEFORE:.*]] = arith.cmpi slt, %[[J]], %{{.*}} : index
// CHECK-NEXT:      %[[V:.*]] = arith.select %[[BEFORE]], %[[A]], %[[B]] : f32
// CHECK-NEXT:      linalg.yield %[[V]] : f32
func.func @cache(%past: tensor<1x2x?x4xf32>, %new: tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32> {
  %c = graph.concat %past, %new {axis = 2 : i64} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  func.return %c : tensor<1x2x?x4xf32>
}
