"""lit configuration of relu-fold's FileCheck tests: `lit test/`."""

# ruff: noqa: F821  (lit defines `config`)
import os
import sys

import lit.formats

config.name = "relu-fold"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")
# ziggurat-opt, xdsl-opt and filecheck: those beside the Python that runs lit (your venv) first
config.environment["PATH"] = os.pathsep.join((os.path.dirname(sys.executable), os.environ["PATH"]))
