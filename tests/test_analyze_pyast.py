"""Python sources are parsed in the analyze stage's threads: every parse goes through one lock (CPython 3.11's AST
converter keeps its recursion depth in shared state, gh-106905; under load a stage of 8 threads over 100 real packages
lost about one package a run to "AST constructor recursion depth mismatch" before the lock, none after)."""

from __future__ import annotations

import threading

from pipeline.analyze import pyast


def test_a_parse_waits_for_the_one_lock():
    parsed = threading.Event()
    with pyast._LOCK:
        worker = threading.Thread(target=lambda: (pyast.parse("x = 1"), parsed.set()))
        worker.start()
        assert not parsed.wait(0.3)  # held here, so the other thread's parse waits
    assert parsed.wait(5)
    worker.join()
