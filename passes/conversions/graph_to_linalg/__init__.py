"""The lowerings of convert-graph-to-linalg (passes/conversions/convert_graph_to_linalg.py), one
module per op family: each holds a `GraphLowering` pattern whose table maps graph op classes to
the functions that lower them."""
