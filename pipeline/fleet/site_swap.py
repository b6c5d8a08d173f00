"""The last good site stays served until a new one is complete: build into a staging copy, then swap it in.

`stage` clones the live site by hard links, so the build into the copy stays incremental (it keeps unchanged pages) and
costs no copy of the bytes; the site writer never writes into an existing file (it writes a new file and renames it
over the old name), so the live site shares no changed byte with the copy. `promote` swaps the built copy in with two
renames, keeping the replaced site beside it as `<site>.previous` until the next promote. A run that fails anywhere
before `promote` leaves the live site as it was.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


class SiteSwapError(Exception):
    pass


def previous_of(live: Path) -> Path:
    return live.with_name(live.name + ".previous")


def stage(live: Path, staging: Path) -> int:
    """Make `staging` a hard-linked clone of `live` (or an empty directory when there is no live site): the files linked."""
    if staging.resolve() == live.resolve():
        raise SiteSwapError(f"{staging}: the staging directory must not be the live site")
    if staging.exists():
        shutil.rmtree(staging)
    if not live.is_dir():
        staging.mkdir(parents=True)
        return 0
    linked = 0

    def link(source: str, target: str) -> None:
        nonlocal linked
        os.link(source, target)
        linked += 1

    shutil.copytree(live, staging, copy_function=link, symlinks=True)
    return linked


def promote(staging: Path, live: Path) -> None:
    """Replace `live` by the built `staging`; refused unless `staging` holds a built site."""
    if not (staging / "index.html").is_file():
        raise SiteSwapError(f"{staging}: no index.html, not a built site; the live site {live} is left as it is")
    previous = previous_of(live)
    if previous.exists():
        shutil.rmtree(previous)
    if live.exists():
        os.rename(live, previous)
    os.rename(staging, live)
