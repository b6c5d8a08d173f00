"""awesome-mcp-servers (punkpeye): the README's "Server Implementations" bullets, with their badges."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.discover.base import SourceBatch, snapshot_files
from pipeline.discover.http import SourceError, SourceHTTP
from pipeline.models import Listing

NAME = "awesome-mcp-servers"
RAW_URL = "https://raw.githubusercontent.com/punkpeye/awesome-mcp-servers/main/README.md"

_HEADING = re.compile(r"^###\s+(?P<title>.*)$")
_ANCHOR = re.compile(r'<a\s+name="(?P<anchor>[^"]*)"\s*>\s*</a>', re.I)
_BULLET = re.compile(r"^\s*[-*]\s+\[(?P<label>[^\]]+)\]\((?P<url>[^)\s]+)\)(?P<rest>.*)$")
_BADGE_LINK = re.compile(r"\[!\[[^\]]*\]\([^)]*\)\]\((?P<url>[^)\s]+)\)")
CODE_HOST = re.compile(r"^(https?://)?(www\.)?(github\.com|gitlab\.com|bitbucket\.org|codeberg\.org|gitee\.com)/", re.I)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
# The README's legend. Variation selectors (U+FE0F) are optional in the wild, so they are stripped first.
BADGES = {
    "🐍": ("language", "Python"), "📇": ("language", "TypeScript"), "🏎": ("language", "Go"), "🦀": ("language", "Rust"),
    "#⃣": ("language", "C#"), "☕": ("language", "Java"), "🌊": ("language", "C/C++"), "💎": ("language", "Ruby"),
    "🎖": ("official", True), "☁": ("scope", "cloud"), "🏠": ("scope", "local"), "📟": ("scope", "embedded"),
    "🍎": ("os", "macOS"), "🪟": ("os", "Windows"), "🐧": ("os", "Linux"),
}
_BADGE_RUN = re.compile("^(?:\\s|" + "|".join(re.escape(b) for b in sorted(BADGES, key=len, reverse=True)) + ")*")


def parse_awesome(markdown: str, where: str = "README.md") -> SourceBatch:
    """One listing per bullet under `## Server Implementations`; the enclosing `###` is its category."""
    batch = SourceBatch()
    in_servers = False
    category: str | None = None
    for number, line in enumerate(markdown.splitlines(), start=1):
        if line.startswith("## "):
            in_servers = line[3:].strip().lower() == "server implementations"
            category = None
            continue
        if not in_servers:
            continue
        if heading := _HEADING.match(line):
            category = _category(heading["title"])
            continue
        bullet = _BULLET.match(line)
        if bullet is None or bullet["url"].startswith("#"):
            continue
        batch.add(f"{where}: line {number}", lambda bullet=bullet, category=category, number=number: _listing(bullet, category, number))
    if not batch.records_read:
        batch.problems.append(f"{where}: no server bullets under '## Server Implementations' (truncated or reformatted?)")
        batch.complete = False
    return batch


def _category(title: str) -> str:
    anchor = _ANCHOR.search(title)
    label = _ANCHOR.sub("", title)
    label = re.sub(r"^[^\w&]+", "", label, flags=re.UNICODE).strip()
    return label or (anchor["anchor"] if anchor else title.strip())


def _listing(bullet: re.Match[str], category: str | None, number: int) -> Listing:
    label, url, rest = bullet["label"].strip(), bullet["url"].strip(), bullet["rest"]
    links: dict[str, str] = {}
    for badge in _BADGE_LINK.finditer(rest):
        if "glama.ai/mcp/servers" in badge["url"]:
            links["glama"] = badge["url"]
    rest = _IMAGE.sub("", _BADGE_LINK.sub("", rest)).replace("\ufe0f", "")
    badges = _BADGE_RUN.match(rest)
    run = badges.group(0) if badges else ""
    attributes: dict[str, object] = {}
    for emoji, (kind, value) in BADGES.items():
        if emoji in run:
            if kind in ("language", "scope", "os"):
                attributes.setdefault(f"awesome_{kind}", []).append(value)  # type: ignore[union-attr]
            else:
                attributes["awesome_official"] = True
    description = rest[len(run):].strip()
    description = re.sub(r"^[-–—:]\s*", "", description).strip()
    if not label:
        raise ValueError("empty link label")
    return Listing(
        source=NAME,
        key=url.lower().rstrip("/"),
        name=label,
        description=description or None,
        repository=url if CODE_HOST.match(url) else None,
        homepage=None if CODE_HOST.match(url) else url,
        external_links=links,
        categories=[category] if category else [],
        attributes=attributes,
        raw={"line": number, "label": label, "url": url, "text": bullet.group(0)[:2000]},
    )


def read_snapshot(directory: Path) -> SourceBatch:
    batch = SourceBatch()
    for path in snapshot_files(directory, "README.md", "*.md"):
        try:
            batch.extend(parse_awesome(path.read_text(encoding="utf-8"), where=path.name))
        except (OSError, UnicodeDecodeError) as exc:
            batch.problems.append(f"{path.name}: unreadable: {exc}")
            batch.complete = False
    return batch


def fetch(http: SourceHTTP, url: str = RAW_URL) -> SourceBatch:
    try:
        markdown, _ = http.get_text(url)
    except SourceError as exc:
        return SourceBatch(problems=[str(exc)], complete=False)
    return parse_awesome(markdown, where=url.rsplit("/", 1)[-1])
