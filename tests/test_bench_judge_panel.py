"""bench/judge_panel.py runs (its --quick path) and shows what the limiter does: far above the providers' limits the
endpoint answers 429. (Whether the panel's own limits see none depends on the machine's scheduling: the bench reports it.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_panel_bench_runs_quickly_and_shows_the_limiter_matters():
    done = subprocess.run([sys.executable, "bench/judge_panel.py", "--quick", "--latency", "0.05"], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    default, too_high = done.stdout.split("limits far above the providers'")
    assert "4 tools, " in default and "tools judged a second" in default
    for text in (default, too_high):
        assert [m for m in ("gpt-5-nano", "gemini-2.0-flash", "mistral-small-2501") if re.search(rf"{m} .*429s\s+\d+", text)] == [
            "gpt-5-nano", "gemini-2.0-flash", "mistral-small-2501"]
    assert int(re.search(r"mistral-small-2501 .*429s\s+(\d+)", too_high).group(1)) > 0, "8 Mistral requests at once exceed 1 a second"
    assert "calibration loop" in done.stdout
