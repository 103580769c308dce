// RUN: ziggurat-opt %s --split-input-file -p fuse-elementwise | filecheck %s

// SiLU times a gate, three generics of one kernel: one generic, x read once, P's body first.
// CHECK-LABEL: func.func @silu_gate
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: %[[R:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>) attrs = {ziggurat.group = 0 : i64} {
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: f32, %[[G:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[X]] : f32
// CHECK-NEXT: %[[EX:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[EX]], %[[EX]] : f32
// CHECK-NEXT: %[[XS:.*]] = arith.mulf %[[X]], %[[S]] : f32
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[XS]], %[[G]] : f32
// CHECK-NEXT: linalg.yield %[[Y]] : f32
// CHECK-NEXT: } -> tensor<4x8xf32>
// CHECK-NEXT: func.return %[[R]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @silu_gate(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e0 = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %r = arith.addf %ex, %ex : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %xs = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%xs, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// A producer writing its result transposed: the fused generic reads P's input through the
// composed map (C's loops (i, j) read P's output at (i, j) = P's loop (j, i), P's input at (j, i)).
// CHECK-LABEL: func.func @transposed_producer
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME: ins(%x : tensor<8x4xf32>)
// CHECK-NOT: linalg.generic
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func @transposed_producer(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %e0 = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#id2, #tr], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x4xf32>) outs(%e0 : tensor<4x8xf32>) attrs = {ziggurat.group = 3 : i64} {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) attrs = {ziggurat.group = 3 : i64} {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// Not fused: the producer's result is also returned, so fusing would compute it twice.
// CHECK-LABEL: func.func @used_twice
// CHECK-COUNT-2: linalg.generic
#id3 = affine_map<(d0) -> (d0)>
func.func @used_twice(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e0 = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e0 : tensor<8xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e1 : tensor<8xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%v: f32, %o: f32):
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  func.return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// -----

// Not fused: the consumer broadcasts the producer (each exp would run four times), the two
// generics belong to different kernels, and a reduction consumer stays as it is.
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-5: linalg.generic
#row = affine_map<(d0, d1) -> (d1)>
#id4 = affine_map<(d0, d1) -> (d0, d1)>
#one = affine_map<(d0) -> (d0)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @refused(%x: tensor<8xf32>, %m: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>) {
  %e0 = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#one, #one], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e0 : tensor<8xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [#row, #id4], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8xf32>) outs(%e1 : tensor<4x8xf32>) attrs = {ziggurat.group = 0 : i64} {
  ^bb0(%v: f32, %o: f32):
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %c = linalg.generic {indexing_maps = [#one, #one], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e2 : tensor<8xf32>) attrs = {ziggurat.group = 1 : i64} {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e3 = tensor.empty() : tensor<8xf32>
  %d = linalg.generic {indexing_maps = [#one, #one], iterator_types = ["parallel"]} ins(%c : tensor<8xf32>) outs(%e3 : tensor<8xf32>) attrs = {ziggurat.group = 2 : i64} {
  ^bb0(%v: f32, %o: f32):
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e4 = tensor.empty() : tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<4x8xf32>) outs(%e4 : tensor<4x8xf32>) attrs = {ziggurat.group = 5 : i64} {
  ^bb0(%v: f32, %o: f32):
    %r = arith.mulf %v, %v : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %z = arith.constant 0.0 : f32
  %e5 = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e5 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id4, #red], iterator_types = ["parallel", "reduction"]} ins(%sq : tensor<4x8xf32>) outs(%f : tensor<4xf32>) attrs = {ziggurat.group = 5 : i64} {
  ^bb0(%v: f32, %o: f32):
    %r = arith.addf %v, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  func.return %b, %d, %s : tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>
}
