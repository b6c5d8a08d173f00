"""Shards: `I/N` is checked, and the stable hash partitions the active servers exactly, in every process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipeline.fleet.shards import Shard, in_shard, parse_shard, select, shard_of
from tests.support import REPO
from tests.test_cli import scoreboard

IDS = [f"server-{i:04d}" for i in range(600)] + ["io.github.owner/name", "ünïcode-server", ""]


@pytest.mark.parametrize("text,shard", [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)), (" 20/20 ", Shard(20, 20))])
def test_a_shard_is_i_of_n(text, shard):
    assert parse_shard(text) == shard and str(shard) == text.strip()


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "3", "a/b", "-1/3", "1/3/5", ""])
def test_a_wrong_shard_is_refused_with_what_is_wrong(text):
    with pytest.raises(ValueError, match="I/N"):
        parse_shard(text)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 20])
def test_every_server_is_in_exactly_one_shard(n):
    chosen = [[sid for sid in IDS if in_shard(sid, Shard(i, n))] for i in range(1, n + 1)]
    assert sorted(sid for part in chosen for sid in part) == sorted(IDS)
    assert all(1 <= shard_of(sid, n) <= n for sid in IDS)
    if n > 1:  # a hash, not a range: every shard gets its share
        assert min(len(part) for part in chosen) > len(IDS) / n / 2


def test_no_shard_is_every_server():
    class Row:
        def __init__(self, id_):
            self.id = id_
    rows = [Row(sid) for sid in IDS]
    assert select(rows, None) == rows and select(rows, Shard(1, 1)) == rows


def test_the_partition_is_the_same_in_every_process():
    """Python's hash() is salted per process; the shard is not."""
    code = "import sys; from pipeline.fleet.shards import shard_of; print([shard_of(f'server-{i:04d}', 7) for i in range(600)])"
    answers = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "random")}
    assert answers == {str([shard_of(f"server-{i:04d}", 7) for i in range(600)]) + "\n"}
    assert shard_of("server-0000", 7) == 6  # fixed for ever: a stored shard assignment never moves


@pytest.mark.parametrize("command", ["analyze", "probe", "monitor", "judge"])
def test_every_per_server_stage_takes_a_shard(command, tmp_path):
    assert "--shard I/N" in scoreboard(command, "--help").stdout
    done = scoreboard(command, "--db", str(tmp_path / "x.db"), "--shard", "4/3")
    assert done.returncode == 2 and "shard 4/3: I/N needs 1 <= I <= N" in done.stderr and "Traceback" not in done.stderr
    done = scoreboard(command, "--db", str(tmp_path / "x.db"), "--shard-db", str(tmp_path / "s.db"))
    assert done.returncode == 2 and "--shard-db needs --shard I/N" in done.stderr


@pytest.mark.parametrize("command", ["discover", "score", "build"])
def test_whole_catalog_stages_refuse_a_shard(command, tmp_path):
    done = scoreboard(command, "--db", str(tmp_path / "x.db"), "--shard", "1/2")
    assert done.returncode == 2 and f"`{command}` reads the whole catalog and takes no --shard" in done.stderr
    assert not (tmp_path / "x.db").exists()


def test_a_probe_of_one_target_takes_no_shard(tmp_path):
    done = scoreboard("probe", "http://127.0.0.1:9/mcp", "--shard", "1/2", "--db", str(tmp_path / "x.db"))
    assert done.returncode == 2 and "--shard selects catalog servers" in done.stderr


def test_a_shard_of_a_missing_main_database_is_a_clear_error(tmp_path):
    done = scoreboard("judge", "--db", str(tmp_path / "none.db"), "--shard", "1/2", "--shard-db", str(tmp_path / "s.db"))
    assert done.returncode == 2 and "none.db: no such database file" in done.stderr and not (tmp_path / "s.db").exists()
