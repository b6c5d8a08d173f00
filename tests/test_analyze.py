"""Static analysis of the installed packages of the real servers, and the pure metrics."""

from __future__ import annotations

import io

import pytest

from pipeline import store
from pipeline.analyze import analyze_server, run_analyze
from pipeline.analyze.fetch import InstalledPackageFetcher, SourceTree
from pipeline.analyze.metrics import (
    description_quality,
    documentation_coverage,
    license_clarity,
)
from pipeline.analyze.spec import spec_version
from pipeline.discover import run_discover
from pipeline.discover.local import LocalCatalogSource
from pipeline.progress import Progress
from tests.support import CATALOG_SIZE, MIT_TEXT, NOW, quiet


@pytest.fixture
def catalog(db, installed):
    run_discover(db, sources=[LocalCatalogSource()], now=NOW, progress=quiet(1))
    return {s.id: s for s in store.active_servers(db)}


def test_installed_python_package_is_analysed(catalog, settings):
    result = analyze_server(catalog["mcp-server-time"], InstalledPackageFetcher(settings.cache_dir), NOW)
    assert result.ok and result.source_ref
    assert result.license == "MIT" and result.metrics["license_clarity"]["value"] == 100
    assert result.spec_version == "2026-07-28" and result.sdk["mcp"].startswith("2.")
    assert result.readme_chars > 500 and result.metrics["documentation_coverage"]["signals"]["readme"] is True
    assert result.metrics["documentation_coverage"]["signals"]["namespace_match"] is True  # mcp-name io.github.modelcontextprotocol/…
    assert result.metrics["maintenance_pulse"] is None  # a package carries no commit history


def test_installed_npm_package_is_analysed(catalog, settings):
    result = analyze_server(catalog["server-memory"], InstalledPackageFetcher(settings.cache_dir), NOW)
    assert result.ok and result.description
    # package.json says "SEE LICENSE IN LICENSE" but ships no LICENSE file: a custom reference, not SPDX.
    assert result.metrics["license_clarity"]["kind"] == "custom"
    assert result.spec_version == "2025-11-25" and result.sdk["@modelcontextprotocol/sdk"].startswith("1.")


def test_fetch_failure_is_recorded_not_raised(db, tmp_path, catalog):
    stream = io.StringIO()
    report = run_analyze(db, servers=list(catalog.values()), fetcher=InstalledPackageFetcher(tmp_path / "empty-cache"), now=NOW,
                         progress=Progress("analyze", 7, stream=stream))
    assert report.counts == {"analyzed": 0, "unchanged": 0, "deferred": 0, "failed": CATALOG_SIZE} and report.failures == CATALOG_SIZE
    assert db["analyses"].count == CATALOG_SIZE and "not installed in the cache" in stream.getvalue()


def tree(**fields) -> SourceTree:
    return SourceTree(fetcher="test", ref="1", **fields)


@pytest.mark.parametrize("manifest,value,kind", [
    ({"license": "MIT"}, 100, "spdx"), ({"license": "Apache-2.0 OR MIT"}, 100, "spdx"), ({"license-expression": "GPL-3.0-only"}, 100, "spdx"),
    ({"classifiers": ["License :: OSI Approved :: MIT License"]}, 100, "spdx"), ({"license": "BSD License"}, 70, "named"),
    ({"license": "SEE LICENSE IN LICENSE.txt"}, 40, "custom"),
    ({}, 0, "none"),
])
def test_license_clarity(manifest, value, kind):
    result = license_clarity(tree(manifest=manifest))
    assert (result["value"], result["kind"]) == (value, kind)


BSD3_TEXT = """Copyright (c) 2024, Acme. All rights reserved.
Redistribution and use in source and binary forms, with or without modification, are permitted provided that ...
3. Neither the name of the copyright holder nor the names of its contributors may be used to endorse ..."""


@pytest.mark.parametrize("manifest,text,host,expected", [
    ({}, MIT_TEXT, None, (100, "MIT", "license text")),  # a standard LICENSE file is its SPDX id, not a custom license
    ({"license": "SEE LICENSE IN LICENSE"}, MIT_TEXT, None, (100, "MIT", "license text")),
    ({}, BSD3_TEXT, None, (100, "BSD-3-Clause", "license text")),
    ({}, "                                 Apache License\n                           Version 2.0, January 2004\n", None,
     (100, "Apache-2.0", "license text")),
    ({}, "GNU GENERAL PUBLIC LICENSE\n Version 3, 29 June 2007", None, (100, "GPL-3.0", "license text")),
    ({"license": "MIT License"}, None, None, (100, "MIT", "manifest name")),
    ({}, "All rights reserved. You may not use this software.", None, (40, "custom", "license text")),
    ({}, "Proprietary terms apply.", "MIT", (100, "MIT", "repository host")),
    ({}, "MIT License, but only on Tuesdays", "NOASSERTION", (40, "custom", "license text")),  # a title line alone is not the license
])
def test_license_text_and_host_are_recognised(manifest, text, host, expected):
    from pipeline.models import RepositoryFacts

    repository = RepositoryFacts(host="github", license=host) if host else None
    result = license_clarity(tree(manifest=manifest, license_text=text, repository=repository))
    assert (result["value"], result["license"], result["source"]) == expected


def test_documentation_coverage_counts_what_is_there():
    full = tree(files=["README.md", "CHANGELOG.md", "examples/a.py", "CONTRIBUTING.md", "LICENSE", "docs/x.md", "SECURITY.md", "CODE_OF_CONDUCT.md"],
                readme="# x", license_text="MIT", manifest_kind="package.json")
    assert documentation_coverage(full)["value"] == 25 + 15 + 15 + 10 + 10 + 7 + 3 + 3 + 5
    assert documentation_coverage(tree())["value"] == 0


def test_description_quality_rewards_a_useful_readme():
    readme = "# Server\n\n## Installation\n\n```\npip install x\n```\n\n## Usage\n" + "Words. " * 300
    assert description_quality("Provides tools to search, read and comment on tickets in the issue tracker.", readme)["value"] == 100
    assert description_quality(None, None)["value"] == 0


@pytest.mark.parametrize("deps,installed,expected", [
    ({"mcp": ">=1.0.0"}, {}, "2024-11-05"), ({"mcp": ">=1.3"}, {}, "2025-06-18"), ({"@modelcontextprotocol/sdk": "^1.30.0"}, {}, "2025-11-25"),
    ({"mcp": ">=1.0"}, {"mcp": "2.3.0"}, "2026-07-28"), ({}, {}, None),
])
def test_spec_version_from_the_sdk(deps, installed, expected):
    assert spec_version(tree(dependencies=deps, installed_versions=installed), [])["value"] == expected
