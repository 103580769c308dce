"""Errors the frontends raise for bad or unsupported models."""

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")  # what splits a line


class FrontendError(Exception):
    """A model the frontend cannot import; the message alone says why (no traceback needed).

    Control characters (a name with a newline, say) are escaped, so the message stays one line.
    """

    def __init__(self, message: str) -> None:
        super().__init__(_CONTROL.sub(lambda m: repr(m.group())[1:-1], message))
