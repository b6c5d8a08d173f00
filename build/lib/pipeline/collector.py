"""Pausing Python's cyclic garbage collector around bulk work."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """Scoring and building allocate millions of short-lived, acyclic objects: reference counting frees
    them, and the cyclic collector only rescans the live heap over and over (about 40% of a rescore's
    time, 30% of a build's loading). It is switched back on, and catches up, as soon as the work ends.
    Processes forked meanwhile inherit the pause and must switch it back on themselves."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
