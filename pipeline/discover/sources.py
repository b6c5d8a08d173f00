"""Every discovery source the scoreboard reads, in seed order: the one list that `--from-snapshot`,
`--online` and `--sources` draw on.

A source is a module in this package (a pure parser of the real payload, a `read_snapshot` of its
saved folder and a `fetch` through SourceHTTP) plus one line here. Its line names it (the folder a
snapshot keeps it under, and the `source` of its listings), says how to read that folder and how to
fetch it live, with whatever credentials it needs taken from the Settings.

Merge precedence is not on this line: it is an order among all sources (the embedded `local`
catalog included, which is no entry here), a decision of trust relative to the others, and the
score stage prints it (the methodology's generated table) without importing this stage, so it stays
one ordered list in the core, `pipeline.identity.SOURCE_PRIORITY`. A new source takes its place
there as well; tests/test_discover_source_registry.py fails while a registered source has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pipeline.config import Settings
from pipeline.discover import awesome, bestof, docker_catalog, github_topics, glama, pulsemcp, registry, smithery
from pipeline.discover.base import SourceBatch
from pipeline.discover.http import SourceHTTP


@dataclass(frozen=True)
class SourceSpec:
    """One source: its name, how to read its snapshot folder, and how to fetch it live."""

    name: str
    read_snapshot: Callable[[Path], SourceBatch]
    fetch: Callable[[SourceHTTP, Settings], SourceBatch]


SOURCES: list[SourceSpec] = [
    SourceSpec(registry.NAME, registry.read_snapshot, lambda http, settings: registry.fetch(http)),
    SourceSpec(awesome.NAME, awesome.read_snapshot, lambda http, settings: awesome.fetch(http)),
    SourceSpec(glama.NAME, glama.read_snapshot, lambda http, settings: glama.fetch(http, settings.glama_token)),
    SourceSpec(pulsemcp.NAME, pulsemcp.read_snapshot,
               lambda http, settings: pulsemcp.fetch(http, settings.pulsemcp_api_key, settings.pulsemcp_tenant)),
    SourceSpec(github_topics.NAME, github_topics.read_snapshot, lambda http, settings: github_topics.fetch(http, settings.github_token)),
    SourceSpec(smithery.NAME, smithery.read_snapshot, lambda http, settings: smithery.fetch(http, settings.smithery_api_key)),
    SourceSpec(bestof.NAME, bestof.read_snapshot, lambda http, settings: bestof.fetch(http, settings.github_token)),
    SourceSpec(docker_catalog.NAME, docker_catalog.read_snapshot, lambda http, settings: docker_catalog.fetch(http, settings.github_token)),
]


def names() -> list[str]:
    return [s.name for s in SOURCES]


def get(name: str) -> SourceSpec:
    return next(s for s in SOURCES if s.name == name)


def check_known(wanted: list[str]) -> None:
    """A clear error naming every unknown source and every known one."""
    unknown = [n for n in wanted if n not in names()]
    if unknown:
        raise ValueError(f"unknown source(s): {', '.join(unknown)}; known: {', '.join(names())}")
