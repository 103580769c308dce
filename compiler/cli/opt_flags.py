"""The flags `ziggurat-opt` adds to xdsl-opt's: mlir-opt's IR printing, timing, statistics,
reproducers, `--list-passes` and `--traceback`."""

from __future__ import annotations

import argparse


def add_driver_flags(arg_parser: argparse.ArgumentParser) -> None:
    """Add mlir-opt's instrumentation flags (both spellings) to xdsl-opt's parser."""
    add = arg_parser.add_argument
    add(
        "--print-ir-before",
        "--mlir-print-ir-before",
        metavar="PASS[,PASS]",
        action="append",
        default=[],
        help="print the IR (to stderr) before each run of the named passes",
    )
    add(
        "--print-ir-after",
        "--mlir-print-ir-after",
        metavar="PASS[,PASS]",
        action="append",
        default=[],
        help="print the IR (to stderr) after each run of the named passes",
    )
    add(
        "--print-ir-before-all",
        "--mlir-print-ir-before-all",
        action="store_true",
        help="print the IR (to stderr) before every pass",
    )
    add(
        "--print-ir-after-all",
        "--mlir-print-ir-after-all",
        action="store_true",
        help="print the IR (to stderr) after every pass",
    )
    add(
        "--print-ir-after-change",
        "--mlir-print-ir-after-change",
        action="store_true",
        help="print the IR (to stderr) after every pass that changed it",
    )
    add(
        "--timing",
        "--mlir-timing",
        action="store_true",
        help="print a per-pass wall-time report to stderr",
    )
    add(
        "--pass-statistics",
        "--mlir-pass-statistics",
        action="store_true",
        help="print per-pass op counts to stderr",
    )
    add(
        "--reproducer",
        metavar="FILE",
        help="when a pass fails, write its input IR and pipeline to FILE",
    )
    add(
        "--run-reproducer",
        action="store_true",
        help="run the pipeline stored in the input file (written by --reproducer)",
    )
    add(
        "--list-passes",
        action="store_true",
        help="list the available passes and named pipelines, then exit",
    )
    add(
        "--traceback",
        action="store_true",
        help="on an internal error, print the Python traceback",
    )
