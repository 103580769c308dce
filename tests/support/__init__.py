"""Helpers shared by the tests under tests/ (imported as `tests.support.<module>`; see
tests/conftest.py). Nothing here is a test."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The repository's root folder (where pyproject.toml is)."""
