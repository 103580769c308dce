"""ONNX backend node tests (onnx.backend.test) of every supported operator, run through
ziggurat's compiled machine code.

Only the node tests of the supported operator families whose tensors are all float32, int64,
int32 or bool (`in_scope`) are collected; those listed in
`EXCLUDED` of tests/support/onnx_backend.py are skipped with the reason given there; those in
its `CI_SKIPPED` pass but are skipped by default to keep CI within its time budget
(`ZIGGURAT_ALL_NODE_TESTS=1` runs them; tests/bench/onnx_node_census.py always does). Run one family with e.g.
`pytest tests/test_onnx_backend.py -k conv`.
"""

from __future__ import annotations

import os
import re
import unittest
import warnings

import onnx.backend.test
from onnx.backend.test.loader import load_model_tests

from tests.support.onnx_backend import (
    CI_SKIPPED,
    EXCLUDED,
    FAMILIES,
    ZigguratBackend,
    in_scope,
)

with warnings.catch_warnings():  # the loader's data generators warn about overflowing casts
    warnings.simplefilter("ignore", RuntimeWarning)
    backend_test = onnx.backend.test.BackendTest(ZigguratBackend, __name__)

for _family in FAMILIES:
    backend_test.include(_family)
if not os.environ.get("ZIGGURAT_NO_EXCLUDE"):  # set to see what the excluded cases do today
    for _pattern in EXCLUDED:
        backend_test.exclude(_pattern)

_INCLUDED = [re.compile(p) for p in FAMILIES]
_MODELS = {  # node test name (with the device suffix) -> its model
    f"{case.name}_cpu": case.model for case in load_model_tests(kind="node") if case.model
}
_EXCLUDED = [(re.compile(p), reason) for p, reason in EXCLUDED.items()]
_CI_SKIPPED = [(re.compile(p), reason) for p, reason in CI_SKIPPED.items()]


def _skip(reason: str):
    @unittest.skip(reason)
    def test(self):  # pragma: no cover - never runs
        pass

    return test


for _name, _case in backend_test.test_cases.items():
    # Only the node tests of the supported families on the CPU: drop everything else instead of
    # reporting ~3700 skips; re-label excluded tests with their reason instead of their regex.
    for _attr in [a for a in vars(_case) if a.startswith("test_")]:
        if (
            not _attr.endswith("_cpu")
            or not any(p.search(_attr) for p in _INCLUDED)
            or not _name.startswith("OnnxBackendNode")
            or _attr not in _MODELS
            or not in_scope(_MODELS[_attr])
        ):
            delattr(_case, _attr)
            continue
        if not os.environ.get("ZIGGURAT_NO_EXCLUDE"):
            reason = next((r for p, r in _EXCLUDED if p.search(_attr)), None)
            if reason is not None:
                setattr(_case, _attr, _skip(reason))
                continue
        if not os.environ.get("ZIGGURAT_ALL_NODE_TESTS"):
            reason = next((r for p, r in _CI_SKIPPED if p.search(_attr)), None)
            if reason is not None:
                setattr(_case, _attr, _skip(f"{reason} (ZIGGURAT_ALL_NODE_TESTS=1 runs it)"))
    if _name.startswith("OnnxBackendNode"):
        globals()[_name] = _case
