"""User-facing errors: each names the problem and where it is; the CLI prints them without a traceback."""

from __future__ import annotations


class ZigguratError(Exception):
    """Base of every error a user can cause (bad model, bad inputs, bad options)."""


class InputError(ZigguratError):
    """Run-time inputs that do not match the compiled model (name, shape, dtype)."""


class CompileError(ZigguratError):
    """A pass or the backend failed on this model."""


class ReferenceModelError(ZigguratError):
    """The reference (onnxruntime) cannot load or run the model we are compared against."""
