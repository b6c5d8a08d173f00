"""Progress lines: first, failures and last always; otherwise at most one per interval."""

from __future__ import annotations

import io

from pipeline.progress import Progress


def test_progress_is_throttled_but_never_hides_failures():
    ticks = iter(float(t) for t in [0, 0.1, 0.2, 0.3, 0.4, 1.5, 1.6, 1.7])
    stream = io.StringIO()
    progress = Progress("probe", 7, stream=stream, clock=lambda: next(ticks))
    progress.step("a", "ok")  # first: shown
    progress.step("b", "ok")  # within the second: hidden
    progress.step("c", "timeout", ok=False)  # failure: shown
    progress.step("d", "ok")  # hidden
    progress.step("e", "ok")  # 1.5 s: shown
    progress.step("f", "ok")  # hidden
    progress.step("g", "ok")  # last: shown
    lines = stream.getvalue().splitlines()
    assert [line.split("  ")[-1] for line in lines] == ["a: ok", "c: timeout", "e: ok", "g: ok"]
    assert lines[-1].startswith("[probe] 7/7") and "left" in lines[-1]
    assert progress.failed == 1
