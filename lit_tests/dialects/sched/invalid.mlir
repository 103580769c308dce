// RUN: ziggurat-opt %s --split-input-file --verify-diagnostics
// #sched.schedule verifies its own consistency when parsed.

// expected-error@+1 {{invalid #sched.schedule: order [0, 0] is not a permutation of 2 loops}}
func.func @not_a_permutation() attributes {s = #sched.schedule<tile = [0, 0], order = [0, 0], unroll = [1, 1], vector = -1, width = 1>} {
  func.return
}

// -----

// expected-error@+1 {{invalid #sched.schedule: order [0, 2] is not a permutation of 2 loops}}
func.func @order_out_of_range() attributes {s = #sched.schedule<tile = [0, 0], order = [0, 2], unroll = [1, 1], vector = -1, width = 1>} {
  func.return
}

// -----

// expected-error@+1 {{invalid #sched.schedule: tile, order and unroll need one entry per loop (got 2, 2, 3)}}
func.func @mismatched_lengths() attributes {s = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 1, 1], vector = -1, width = 1>} {
  func.return
}

// -----

// expected-error@+1 {{invalid #sched.schedule: vector loop 2 out of range}}
func.func @vector_out_of_range() attributes {s = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 16], vector = 2, width = 16>} {
  func.return
}

// -----

// expected-error@+1 {{invalid #sched.schedule: vector loop -2 out of range}}
func.func @vector_negative() attributes {s = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 1], vector = -2, width = 1>} {
  func.return
}

// -----

// expected-error@+1 {{invalid #sched.schedule: the vector loop's register tile must be a multiple of the width}}
func.func @unroll_not_multiple_of_width() attributes {s = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 24], vector = 1, width = 16>} {
  func.return
}

// -----

// expected-error@+1 {{invalid #sched.schedule: tile sizes must be >= 0 and unroll factors >= 1}}
func.func @zero_unroll() attributes {s = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [0, 1], vector = -1, width = 1>} {
  func.return
}

// -----

// expected-error@+1 {{Expected ','}}
func.func @missing_field() attributes {s = #sched.schedule<tile = [0], order = [0], unroll = [1], vector = -1>} {
  func.return
}

// -----

// expected-error@+1 {{invalid #sched.schedule: tile sizes and unroll factors must be at most 2**31 = 2147483648}}
func.func @absurd_tile() attributes {s = #sched.schedule<tile = [0, 1099511627776], order = [0, 1], unroll = [1, 1], vector = -1, width = 1>} {
  func.return
}

// -----

// expected-error@+1 {{invalid #sched.schedule: width = 0 is out of range 1..64}}
func.func @zero_width() attributes {s = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 1], vector = -1, width = 0>} {
  func.return
}

// -----

// expected-error@+1 {{invalid #sched.schedule: width = 128 is out of range 1..64}}
func.func @absurd_width() attributes {s = #sched.schedule<tile = [0, 0], order = [0, 1], unroll = [1, 128], vector = 1, width = 128>} {
  func.return
}
