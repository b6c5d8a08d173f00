"""Where the files that ship beside the code live: templates, static files, and the documents the site renders.

The repository keeps them at its top (site/, docs/); a wheel carries them inside the package as the package data
`pipeline.site` and `pipeline.docs` (pyproject.toml maps one onto the other). A source tree, run in place or installed
editable, reads its own top-level copies, so edits show without reinstalling and a second checkout never reads the first's.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_PACKAGE = resources.files("pipeline")
CHECKOUT: Path | None = None if _PACKAGE.joinpath("site").is_dir() else Path(__file__).resolve().parent.parent
"""The source tree being run, or None when the package is installed from a wheel."""


def _shipped(name: str) -> Path:
    return CHECKOUT / name if CHECKOUT else Path(str(_PACKAGE.joinpath(name)))


SITE = _shipped("site")
TEMPLATES = SITE / "templates"
STATIC = SITE / "static"
DOCS = _shipped("docs")
METHODOLOGY = DOCS / "methodology.md"  # rendered into the site's methodology page
SCHEMA_DOC = DOCS / "schema.md"  # table and column documentation, shown by Datasette
