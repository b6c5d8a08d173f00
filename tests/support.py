"""Shared by the tests: fixed times, paths, test twins and the helpers several test files use."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
