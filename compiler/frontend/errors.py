"""Errors the frontends raise for bad or unsupported models."""


class FrontendError(Exception):
    """A model the frontend cannot import; the message alone says why (no traceback needed)."""
