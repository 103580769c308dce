// RUN: ziggurat-opt %s --split-input-file --verify-diagnostics

func.func @bad_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{shapes [2, 3] and [4] are not broadcastable}}
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @wrong_result(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+1 {{result type tensor<3x2xf32> does not match inferred tensor<2x3xf32>}}
  %0 = graph.relu %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error@+1 {{weight has 2 input channels per group, expected 3}}
  %0 = graph.conv %x, %w : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error@+1 {{pads must have 4 values, got 2}}
  %0 = graph.conv %x, %w {pads = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @matmul_k(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error@+1 {{matmul contraction mismatch}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @gemm_trans(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // expected-error@+1 {{trans_a and trans_b must be 0 or 1}}
  %0 = graph.gemm %a, %b {trans_a = 2 : i64} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{axis -1 must be normalized into [0, 2)}}
  %0 = graph.softmax %a {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error@+1 {{cannot reshape [2, 3] into [7]: element counts differ}}
  %0 = graph.reshape %a : (tensor<2x3xf32>) -> tensor<7xf32>
  func.return %0 : tensor<7xf32>
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+1 {{perm [0, 0] is not a permutation of 2 dims}}
  %0 = graph.transpose %a {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @squeeze_non_unit(%a: tensor<2x1xf32>) -> tensor<1xf32> {
  // expected-error@+1 {{cannot squeeze axis 0 of extent 2}}
  %0 = graph.squeeze %a {axes = array<i64: 0>} : (tensor<2x1xf32>) -> tensor<1xf32>
  func.return %0 : tensor<1xf32>
}

// -----

func.func @reduce_unsorted(%a: tensor<2x3xf32>) -> tensor<1x1xf32> {
  // expected-error@+1 {{axes [1, 0] must be sorted, unique and in [0, 2)}}
  %0 = graph.reduce_sum %a {axes = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<1x1xf32>
  func.return %0 : tensor<1x1xf32>
}

// -----

func.func @split_sizes(%a: tensor<2x6xf32>) -> tensor<2x2xf32> {
  // expected-error@+1 {{split sizes [2, 3] do not add up to extent 6}}
  %0:2 = graph.split %a {axis = 1 : i64, sizes = array<i64: 2, 3>} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  func.return %0#0 : tensor<2x2xf32>
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // expected-error@+1 {{differ off axis 1}}
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return %0 : tensor<2x6xf32>
}

// -----

func.func @slice_unnormalized(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{slice (0, 9, 1) is not normalized for extent 8}}
  %0 = graph.slice %a {starts = array<i64: 0>, ends = array<i64: 9>, steps = array<i64: 1>} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

func.func @pool_kernel(%a: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error@+1 {{kernel must have 2 values, got 1}}
  %0 = graph.max_pool %a {kernel = array<i64: 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  func.return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @gelu_mode(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{approximate must be "none" or "tanh", got "fast"}}
  %0 = graph.gelu %a {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @cast_to(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{cannot cast to "i8"; supported: f32, i64, i32, i1}}
  %0 = graph.cast %a {to = "i8"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @pad_negative(%a: tensor<2xf32>) -> tensor<0xf32> {
  // expected-error@+1 {{make a negative extent}}
  %0 = graph.pad %a {pads = array<i64: -2, -1>} : (tensor<2xf32>) -> tensor<0xf32>
  func.return %0 : tensor<0xf32>
}

// -----

func.func @const_type() -> tensor<2xi16> {
  // expected-error@+1 {{element type must be one of f32, i64, i32, i1, got i16}}
  %0 = graph.constant dense<[1, 2]> : tensor<2xi16>
  func.return %0 : tensor<2xi16>
}

// -----

func.func @missing_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{property 'axis' expected}}
  %0 = graph.softmax %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @fused_arg_types(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{block argument types (tensor<3x2xf32>) do not match operand types (tensor<2x3xf32>)}}
  %0 = graph.fused "relu" elementwise (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<3x2xf32>):
    %k = graph.constant dense<0.0> : tensor<2x3xf32>
    graph.yield %k : tensor<2x3xf32>
  }
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @fused_yield_types(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{graph.yield types (tensor<2x3xf32>, tensor<2x3xf32>) do not match result types (tensor<2x3xf32>)}}
  %0 = graph.fused "relu" elementwise (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %r = graph.relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
    graph.yield %r, %r : tensor<2x3xf32>, tensor<2x3xf32>
  }
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @fused_pattern(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{unknown pattern "fancy"}}
  %0 = graph.fused "relu" fancy (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %r = graph.relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
    graph.yield %r : tensor<2x3xf32>
  }
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @fused_captures(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{Operation using value defined out of its IsolatedFromAbove parent}}
  %0 = graph.fused "relu" elementwise (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %r = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    graph.yield %r : tensor<2x3xf32>
  }
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @fused_no_yield(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{graph.fused body must end with graph.yield}}
  %0 = graph.fused "relu" elementwise (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %r = graph.relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  }
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @yield_outside(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'graph.yield' expects parent op 'graph.fused'}}
  graph.yield %x : tensor<2x3xf32>
}

// -----

func.func @layout_name(%x: tensor<1x16x4x4xf32>) -> tensor<1x1x4x4x16xf32> {
  // expected-error@+1 {{layout must be "NCHW" or "NCHW<b>c" with a block b >= 1, got "NHWC"}}
  %0 = graph.layout_transform %x {src = "NCHW", dst = "NHWC"} : (tensor<1x16x4x4xf32>) -> tensor<1x1x4x4x16xf32>
  func.return %0 : tensor<1x1x4x4x16xf32>
}

// -----

func.func @layout_block(%x: tensor<1x12x4x4xf32>) -> tensor<1x1x4x4x16xf32> {
  // expected-error@+1 {{NCHW8c needs channels divisible by 8, got 12}}
  %0 = graph.layout_transform %x {src = "NCHW", dst = "NCHW8c"} : (tensor<1x12x4x4xf32>) -> tensor<1x1x4x4x16xf32>
  func.return %0 : tensor<1x1x4x4x16xf32>
}

// -----

func.func @conv_nchwc_group(%x: tensor<1x2x4x4x8xf32>, %w: tensor<2x1x3x3x8x8xf32>) -> tensor<1x2x2x2x8xf32> {
  // expected-error@+1 {{group 3 must divide the 2 input and 2 output channel blocks}}
  %0 = graph.conv_nchwc %x, %w {group = 3 : i64} : (tensor<1x2x4x4x8xf32>, tensor<2x1x3x3x8x8xf32>) -> tensor<1x2x2x2x8xf32>
  func.return %0 : tensor<1x2x2x2x8xf32>
}

// -----

func.func @conv_nchwc_blocks(%x: tensor<1x2x4x4x8xf32>, %w: tensor<2x4x3x3x4x8xf32>) -> tensor<1x2x2x2x8xf32> {
  // expected-error@+1 {{weights [2, 4, 3, 3, 4, 8] do not read 2 blocks of 8 input channels}}
  %0 = graph.conv_nchwc %x, %w : (tensor<1x2x4x4x8xf32>, tensor<2x4x3x3x4x8xf32>) -> tensor<1x2x2x2x8xf32>
  func.return %0 : tensor<1x2x2x2x8xf32>
}

// -----

func.func @winograd_tiles(%x: tensor<1x2x6x6x8xf32>) -> tensor<36x4x16xf32> {
  // expected-error@+1 {{the 3x3 conv's output [6, 6] is not a whole number of 4x4 tiles}}
  %0 = graph.winograd_input %x {tile = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6x8xf32>) -> tensor<36x4x16xf32>
  func.return %0 : tensor<36x4x16xf32>
}

// -----

func.func @winograd_tile_size(%x: tensor<1x2x6x6x8xf32>) -> tensor<25x9x16xf32> {
  // expected-error@+1 {{winograd tile must be one of [2, 4], got 3}}
  %0 = graph.winograd_input %x {tile = 3 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6x8xf32>) -> tensor<25x9x16xf32>
  func.return %0 : tensor<25x9x16xf32>
}

// -----

func.func @winograd_points(%m: tensor<16x4x8xf32>) -> tensor<1x1x8x8x8xf32> {
  // expected-error@+1 {{4x4 tiles need 36 transform points, got 16}}
  %0 = graph.winograd_output %m {tile = 4 : i64, image = array<i64: 8, 8>, block = 8 : i64} : (tensor<16x4x8xf32>) -> tensor<1x1x8x8x8xf32>
  func.return %0 : tensor<1x1x8x8x8xf32>
}

// -----

func.func @winograd_bias(%m: tensor<36x4x8xf32>, %b: tensor<16xf32>) -> tensor<1x1x8x8x8xf32> {
  // expected-error@+1 {{bias must have shape [8], got [16]}}
  %0 = graph.winograd_output %m, %b {tile = 4 : i64, image = array<i64: 8, 8>, block = 8 : i64} : (tensor<36x4x8xf32>, tensor<16xf32>) -> tensor<1x1x8x8x8xf32>
  func.return %0 : tensor<1x1x8x8x8xf32>
}
