"""The command-line layer, the top of the stack: `ziggurat` (main.py) and `ziggurat-opt`
(opt.py). It may import every layer below (compiler, autotune); nothing imports it."""
