"""Opt-out and delisting from the repository's file (optout.yml): validated strictly, applied before every probe and at
discovery, withdrawn by removing the entry (deviation 101)."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest

from pipeline import store
from pipeline.discover import run_discover
from pipeline.fleet.optout import DELISTED_BY, OptOutError, load_optout, parse_optout
from pipeline.probe import run_probe
from pipeline.probe.monitor import run_monitor
from pipeline.progress import Progress
from pipeline.render import run_build
from pipeline.sandbox.install import install_key
from pipeline.score.registry import infos
from tests.support import NOW, REPO, ListSource, StaticInstaller, entry, python_installed, quiet, raw_server_spec
from tests.test_probe_endpoint import Site, js, response

ENTRY = "- {name}: {value}\n  delist: {delist}\n  date: 2026-12-01\n  reference: \"#{ref}\"\n"


def optout(*lines: tuple[str, str, bool]) -> str:
    return "".join(ENTRY.format(name=name, value=value, delist=str(delist).lower(), ref=i + 10) for i, (name, value, delist) in enumerate(lines))


def test_the_repositorys_file_and_its_example_are_valid():
    text = (REPO / "optout.yml").read_text()
    assert load_optout(REPO / "optout.yml").entries == ()
    example = "\n".join(line.removeprefix("# ") for line in text.split("# Example")[1].splitlines()[1:])
    (found,) = parse_optout(example).entries
    assert found.delist and found.key == "github:example-org/example-mcp-server" and found.cited == "#123"


@pytest.mark.parametrize("text,problem", [
    ("server: x\n", "line 1: the file is a list of entries"),
    ("- server: abc\n  delist: maybe\n  date: 2026-12-01\n  reference: 1\n", "entry 1 (line 1): delist: Input should be a valid boolean"),
    (optout(("server", "ok", False)) + "- server: abc\n  delist: true\n  date: 2026-13-01\n  reference: 2\n",
     "entry 2 (line 5): month must be in 1..12"),
    ("- server: abc\n  delist: true\n  date: 2026-12-01\n", "entry 1 (line 1): reference: Field required"),
    ("- server: abc\n  delist: true\n  date: 2026-12-01\n  reference: 1\n  note: x\n", "entry 1 (line 1): note: unknown field"),
    ("- server: abc\n  server: abd\n  delist: true\n  date: 2026-12-01\n  reference: 1\n", "entry 1 (line 1): server: given twice"),
    ("- server: abc\n  repository: https://github.com/o/r\n  delist: true\n  date: 2026-12-01\n  reference: 1\n",
     "entry 1 (line 1): name the server by exactly one of server, repository, remote_url, registry_name (found server, repository)"),
    ("- delist: true\n  date: 2026-12-01\n  reference: 1\n", "(found none)"),
    ("- repository: not a url\n  delist: true\n  date: 2026-12-01\n  reference: 1\n", "repository: 'not a url' is not an http(s) URL"),
    ("- server: Has Spaces\n  delist: true\n  date: 2026-12-01\n  reference: 1\n", "server: 'Has Spaces' is not a catalog id"),
    # An unquoted # starts a comment: the reference is then empty.
    ("- server: abc\n  delist: true\n  date: 2026-12-01\n  reference: #12\n", "reference: Input should be a valid string"),
    (optout(("remote_url", "https://a.example.net/mcp/", True), ("remote_url", "HTTPS://A.example.net/mcp", False)),
     "entry 2 (line 5): names the same server as entry 1"),
    ("- [1, 2\n", "not valid YAML"),
    ("- just a string\n", "entry 1 (line 1): an entry is a mapping"),
])
def test_a_malformed_file_is_an_error_naming_the_entry_and_its_line(text, problem):
    with pytest.raises(OptOutError) as raised:
        parse_optout(text)
    assert problem in str(raised.value) and str(raised.value).startswith("optout.yml")


def test_a_configured_file_that_is_missing_is_an_error_and_none_configured_is_no_entries(tmp_path):
    with pytest.raises(OptOutError, match="cannot read the opt-out file"):
        load_optout(tmp_path / "optout.yml")
    assert load_optout(None).entries == ()


ANSWER = {("POST", "/mcp"): lambda o: response("200 OK", js({"jsonrpc": "2.0", "id": 1, "result": {}}))}


@pytest.mark.parametrize("name,value", [("server", "asked"), ("repository", "https://github.com/ACME/asked.git"), ("remote_url", "{origin}/mcp/")])
@pytest.mark.parametrize("stage", [run_probe, run_monitor])
def test_a_server_in_the_file_is_never_probed_and_the_others_are(db, settings, name, value, stage):
    """Two loopback servers, each counting every request it receives (each names the scoreboard): the one in the file gets none."""
    with Site(ANSWER) as asked, Site(ANSWER) as other:
        servers = [entry("asked", transport="streamable-http", remote_url=asked.origin + "/mcp", repository="https://github.com/acme/asked"),
                   entry("other", transport="streamable-http", remote_url=other.origin + "/mcp")]
        run_discover(db, sources=[ListSource("test", servers)], now=NOW, progress=quiet(1))
        listed = parse_optout(optout((name, value.format(origin=asked.origin), False)))
        report = stage(db, servers=store.active_servers(db), installer=StaticInstaller({}), now=NOW,
                       settings=settings.model_copy(update={"allow_private": True, "call_timeout": 2.0}),
                       progress=Progress("probe", 2, stream=io.StringIO()), optout=listed)
    assert report.counts.get("opted_out_file") == 1
    assert asked.agents == [] and len(other.agents) >= 1
    assert {row["server_id"] for row in db.query("select server_id from probe_runs")} == {"other"}
    assert db["servers"].get("asked")["is_active"] == 1  # opted out of probing, still on the scoreboard


def test_a_local_server_in_the_file_is_never_installed_nor_started(db, settings):
    class Counting(StaticInstaller):
        asked: list = []

        def install(self, specs, progress=None):
            self.asked.extend(specs)
            return super().install(specs)

    spec = raw_server_spec("ok")
    run_discover(db, sources=[ListSource("test", [entry("local", transport="stdio", launch=spec)])], now=NOW, progress=quiet(1))
    installer = Counting({install_key(spec): python_installed()})
    report = run_probe(db, servers=store.active_servers(db), installer=installer, now=NOW, settings=settings,
                       progress=Progress("probe", 1, stream=io.StringIO()), optout=parse_optout(optout(("server", "local", False))))
    assert report.counts == {"opted_out_file": 1} and installer.asked == [] and db["probe_runs"].count == 0


def test_a_delisted_server_leaves_the_site_and_comes_back_when_its_entry_is_removed(db, tmp_path):
    from pipeline.score import run_score

    servers = [entry("gone", repository="https://github.com/acme/gone"), entry("stays", repository="https://github.com/acme/stays"),
               entry("asked-itself", repository="https://github.com/acme/asked-itself")]
    source = ListSource("test", servers)
    site = tmp_path / "site"

    def cycle(listed, at):
        report = run_discover(db, sources=[source], now=at, progress=quiet(1), optout=listed)
        run_score(db, servers=store.active_servers(db), now=at)
        run_build(db, rubrics=infos(), site_dir=site, now=at)
        board = {row["id"] for row in json.loads((site / "api" / "servers.json").read_text())["servers"]}
        return report, board

    _, board = cycle(parse_optout(""), NOW)
    assert board == {"gone", "stays", "asked-itself"} and (site / "servers" / "gone.html").exists()
    store.delist(db, "asked-itself", NOW)  # its own /.well-known/mcp-scoreboard asked: not the file's to lift

    delisting = parse_optout(optout(("repository", "https://github.com/acme/gone", True)))
    report, board = cycle(delisting, NOW + timedelta(days=1))
    assert report.counts["delisted_by_file"] == 1 and board == {"stays"}
    assert not (site / "servers" / "gone.html").exists() and not (site / "api" / "servers" / "gone.json").exists()
    attributes = json.loads(db["servers"].get("gone")["attributes"])
    assert attributes["delisted_by"] == DELISTED_BY and attributes["delist_reference"] == "#10"
    report, board = cycle(delisting, NOW + timedelta(days=2))  # the source still lists it: it stays off, delisted once
    assert "delisted_by_file" not in report.counts and board == {"stays"}

    report, board = cycle(parse_optout(""), NOW + timedelta(days=3))  # the entry is removed: back at this discovery
    assert report.counts["delisting_lifted"] == 1 and board == {"gone", "stays"} and (site / "servers" / "gone.html").exists()
    assert "delisted_by" not in json.loads(db["servers"].get("gone")["attributes"])
    assert db["servers"].get("asked-itself")["is_active"] == 0


def test_an_opt_out_entry_keeps_a_server_listed_and_a_delisting_turned_opt_out_lists_it_again(db):
    source = ListSource("test", [entry("quiet", repository="https://github.com/acme/quiet")])
    run_discover(db, sources=[source], now=NOW, progress=quiet(1), optout=parse_optout(optout(("server", "quiet", False))))
    assert db["servers"].get("quiet")["is_active"] == 1
    run_discover(db, sources=[source], now=NOW, progress=quiet(1), optout=parse_optout(optout(("server", "quiet", True))))
    assert db["servers"].get("quiet")["is_active"] == 0
    report = run_discover(db, sources=[source], now=NOW, progress=quiet(1), optout=parse_optout(optout(("server", "quiet", False))))
    assert report.counts["delisting_lifted"] == 1 and db["servers"].get("quiet")["is_active"] == 1


def test_the_cli_stops_on_a_malformed_file_before_any_request(tmp_path, monkeypatch, capsys):
    from pipeline.cli import main

    def scoreboard(*args: str) -> tuple[int, str, str]:
        """The CLI in this process (its entry point, as the console script calls it): exit code, standard output and error."""
        try:
            main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    path = tmp_path / "scoreboard.db"
    bad = tmp_path / "optout.yml"
    monkeypatch.setenv("SCOREBOARD_OPTOUT", str(bad))
    monkeypatch.setenv("SCOREBOARD_ALLOW_PRIVATE", "1")
    with Site(ANSWER) as site:
        db = store.open_db(path)
        run_discover(db, sources=[ListSource("test", [entry("s", transport="streamable-http", remote_url=site.origin + "/mcp")])], now=NOW,
                     progress=quiet(1))
        bad.write_text(optout(("server", "s", False)) + "- server: t\n  delist: true\n  date: 2026-12-01\n")
        for command in ("monitor", "probe", "discover"):
            code, _, err = scoreboard(command, "--db", str(path))
            assert code == 2 and f"{bad}, entry 2 (line 5): reference: Field required" in err and "Traceback" not in err
        assert db["runs"].count == 0  # the malformed file stopped every command before its run began
        bad.write_text(optout(("server", "s", False)))
        code, out, _ = scoreboard("monitor", "--db", str(path))
        assert code == 0 and "opted_out_file 1" in out
    assert site.agents == []
