"""A node's attributes decoded to Python values (`attrs`) and ONNX strings as text (`text`): what
every converter reads its attributes with. Apart because the constant folder uses them too."""

from __future__ import annotations

from typing import Any

import onnx
from onnx import helper


def attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def text(v: Any) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)
