"""Identity of a server across sources: normalised repository and remote URLs, catalog keys, page ids,
package names, source priority and verified publishers. Every stage may use it (core).

Seed 000 keys the catalog by the normalised GitHub URL. Sources spell the same repository many
ways (case, `.git`, trailing slash, `www.`, `http:`, fragments, `/tree/<branch>/<path>` links into
a monorepo), so every URL goes through `parse_github` before it becomes a key. Pure functions only.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

_OWNER = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_REPO = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
# First path segments of github.com that are site pages, not owners.
_NOT_OWNERS = {
    "about", "apps", "collections", "contact", "enterprise", "events", "explore", "features", "issues", "login", "marketplace",
    "new", "notifications", "orgs", "organizations", "pricing", "pulls", "search", "settings", "site", "sponsors", "topics",
    "trending", "users",
}
# The reference servers that moved from modelcontextprotocol/servers to servers-archived (2025-05);
# links in other sources still point at servers/tree/main/src/<name>.
ARCHIVED_REFERENCE_SERVERS = frozenset({
    "aws-kb-retrieval-server", "brave-search", "everart", "gdrive", "github", "gitlab", "google-maps", "postgres", "puppeteer",
    "redis", "sentry", "slack", "sqlite",
})
# The reference servers that stayed in modelcontextprotocol/servers: a link to servers-archived/src/<name> for one of
# them (awesome-mcp-servers has four) names a folder that was never archived there, so it means the live one.
LIVE_REFERENCE_SERVERS = frozenset({"everything", "fetch", "filesystem", "git", "memory", "sequentialthinking", "time"})
# Seed 000: "Official Registry fields take precedence, then aggregator-specific metadata is layered
# on". The order among aggregators is ours (methodology deviation 25): curated catalogs with
# first-party metadata before crawled directories, lists and search results.
# Every source in pipeline/discover/sources.py has its place here (a test holds it).
SOURCE_PRIORITY = (
    "local", "official-registry", "docker-mcp-catalog", "pulsemcp", "glama", "smithery", "best-of-mcp-servers",
    "awesome-mcp-servers", "github-topics",
)


def source_rank(source: str) -> int:
    return SOURCE_PRIORITY.index(source) if source in SOURCE_PRIORITY else len(SOURCE_PRIORITY)


@dataclass(frozen=True)
class RepoRef:
    """A GitHub repository (lower-cased, GitHub is case-insensitive) and an optional path inside it."""

    owner: str
    name: str
    subpath: str | None = None

    @property
    def repo_key(self) -> str:
        return f"github:{self.owner}/{self.name}"

    @property
    def key(self) -> str:
        return self.repo_key if not self.subpath else f"{self.repo_key}#{self.subpath.lower()}"

    @property
    def url(self) -> str:
        return f"https://github.com/{self.owner}/{self.name}"

    def renamed(self, aliases: dict[str, str]) -> RepoRef:
        """Follow known renames: `aliases` maps an old repo key to the new one (best-of's updated_github_id)."""
        ref = self
        if ref.repo_key in ("github:modelcontextprotocol/servers", "github:modelcontextprotocol/servers-archived") and ref.subpath:
            parts = ref.subpath.split("/")
            if len(parts) >= 2 and parts[0] == "src" and parts[1].lower() in ARCHIVED_REFERENCE_SERVERS:
                ref = RepoRef("modelcontextprotocol", "servers-archived", ref.subpath)
            elif len(parts) >= 2 and parts[0] == "src" and parts[1].lower() in LIVE_REFERENCE_SERVERS:
                ref = RepoRef("modelcontextprotocol", "servers", ref.subpath)
        seen = {ref.repo_key}
        while ref.repo_key in aliases:
            target = aliases[ref.repo_key]
            if target in seen:  # a rename loop in the data: stop where we are
                break
            seen.add(target)
            owner, _, name = target.removeprefix("github:").partition("/")
            ref = RepoRef(owner, name, ref.subpath)
        return ref


def parse_github(url: str | None, subfolder: str | None = None) -> RepoRef | None:
    """A GitHub repository URL in any spelling the sources use, or None if it is not one.

    `/tree/<branch>/<path>` keeps `<path>` as the subpath; `/blob/<branch>/<path>/<file>` keeps the
    file's directory; other pages of a repository (`/issues`, `/wiki`) mean the repository itself.
    `subfolder` (the registry's `repository.subfolder`) wins over a path found in the URL.
    """
    if not url or not isinstance(url, str):
        return None
    text = url.strip().strip("<>").strip()
    if text.startswith("git@github.com:"):
        text = "https://github.com/" + text.removeprefix("git@github.com:")
    text = re.sub(r"^(git\+)?(https?|git|ssh)://(git@)?", "https://", text, flags=re.I)
    if not re.match(r"^https://", text, re.I):
        text = "https://" + text
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if host not in ("github.com", "www.github.com"):
        return None
    segments = [unquote(s) for s in parts.path.split("/") if s]
    if len(segments) < 2:
        return None
    owner, name = segments[0], segments[1]
    if name.lower().endswith(".git"):
        name = name[:-4]
    if owner.lower() in _NOT_OWNERS or not _OWNER.match(owner) or not _REPO.match(name) or name in (".", ".."):
        return None
    rest = segments[2:]
    subpath: str | None = None
    if len(rest) >= 3 and rest[0] in ("tree", "blob"):
        path = rest[2:-1] if rest[0] == "blob" else rest[2:]
        subpath = "/".join(path) or None
    if subfolder and isinstance(subfolder, str):
        subpath = subfolder.strip().strip("/") or subpath
    if subpath:
        subpath = re.sub(r"/{2,}", "/", subpath.strip("/")).removeprefix("./") or None
    return RepoRef(owner.lower(), name.lower(), subpath)


def normalise_url(url: str | None) -> str | None:
    """An http(s) URL reduced to what identifies an endpoint: lower-case host, no default port,
    no query, fragment or trailing slash. None for anything that is not an http(s) URL."""
    if not url or not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in ("http", "https") or not host or any(c.isspace() for c in host):
        return None
    netloc = host if port in (None, 80 if scheme == "http" else 443) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def remote_key(url: str | None) -> str | None:
    normal = normalise_url(url)
    return f"remote:{normal}" if normal else None


_PRIVATE_HOST = re.compile(
    r"^remote:https?://(localhost|127\.|0\.0\.0\.0|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|169\.254\.|\[|[^/]*\.(local|internal|localhost|test|example|invalid)(:|/|$)"
    r"|[^/]*(example\.(com|org|net))(:|/|$)|[^/]*[{}<>$])", re.I)


def is_public_endpoint(key: str) -> bool:
    """A remote key whose host is public: not localhost, a private or link-local address, a reserved test or
    example domain, or a URL template."""
    return not _PRIVATE_HOST.match(key)


def repository_key(url: str | None, subfolder: str | None = None, aliases: dict[str, str] | None = None) -> str | None:
    """The key of a source repository: GitHub (with renames followed), else any other http(s) host."""
    ref = parse_github(url, subfolder)
    if ref is not None:
        return ref.renamed(aliases or {}).key
    normal = normalise_url(url)
    return f"repo:{normal.split('://', 1)[1]}" if normal else None


def slug_id(key: str) -> str:
    """A readable page id for a catalog key: lower-case, safe in URLs and file names.

    `github:owner/repo#src/x` -> `owner--repo--src--x`; other kinds keep their kind as a prefix
    (`registry--io.github.x--y`). Two keys can slug alike (`src/x` and `src--x`); the catalog
    then gives the later one `with_hash(id, key)`, and keeps every id once given.
    """
    kind, _, rest = key.partition(":")
    readable = rest.replace("#", "/") if kind == "github" else f"{kind}/{rest.split('://', 1)[-1]}"
    parts = [re.sub(r"[^a-z0-9._]+", "-", part.lower()).strip("-._") for part in readable.split("/")]
    slug = "--".join(part for part in parts if part)
    return with_hash(slug, key) if len(slug) > 110 or not slug else slug


def with_hash(slug: str, key: str) -> str:
    return f"{slug[:110].strip('-._')}-{hashlib.sha1(key.encode()).hexdigest()[:8]}".lstrip("-._")


def pypi_name(name: str) -> str:
    """PEP 503 normalisation: PyPI Stats keys packages by it."""
    return re.sub(r"[-_.]+", "-", name).lower()


# npm's own name grammar (validate-npm-package-name), lower case: npm refuses capitals in new names,
# so two spellings of one name differing in case are one package misspelled.
_NPM_NAME = re.compile(r"^(?:@[a-z0-9~-][a-z0-9._~-]*/)?[a-z0-9~-][a-z0-9._~-]*$")
_PYPI_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")  # PEP 508


def package_identity(registry: str, identifier: str) -> tuple[str, str]:
    """A package across its versions, for deduplication: its registry and name, PyPI names by PEP 503, others
    case-insensitive, an OCI image without its tag or digest (`docker.io/x/y:1.7.2` and `:1.7.3` are one image)."""
    registry, name = registry.strip().lower(), identifier.strip()
    if registry == "pypi":
        return registry, pypi_name(name)
    if registry == "oci":
        name = name.split("@", 1)[0]
        head, _, tail = name.rpartition("/")
        name = f"{head}/{tail.split(':', 1)[0]}" if head else tail.split(":", 1)[0]
    return registry, name.lower()


def package_key(registry: str, identifier: str) -> str | None:
    """A published package as an identity key, its version ignored: `npm:<name>` (lower case) or
    `pypi:<PEP 503 name>`. None for a name its registry would refuse (the 2025-05 registry seed
    lists GitHub `owner/repo` paths as npm and PyPI packages) and for every other registry: OCI and
    Docker names carry tags and mirrors, and Docker rebuilds other vendors' servers under `mcp/`;
    `mcpb` identifiers are release-file URLs; `unknown` is no registry at all."""
    name = identifier.strip()
    if registry == "npm" and len(name) <= 214 and _NPM_NAME.match(name.lower()):
        return f"npm:{name.lower()}"
    if registry == "pypi" and _PYPI_NAME.match(name):
        return f"pypi:{pypi_name(name)}"
    return None


def smithery_key(qualified_name: str) -> str:
    """Smithery's qualified name (`@owner/slug`, or a bare `slug`) as a key: no `@`, lower case."""
    return f"smithery:{qualified_name.strip().removeprefix('@').lower()}"


def smithery_name_in_url(url: str | None) -> str | None:
    """The qualified name a Smithery URL carries: `https://server.smithery.ai/@owner/slug/mcp` (a
    hosted endpoint) or `https://smithery.ai/server/@owner/slug` (its page). None for any other URL."""
    normal = normalise_url(url)
    if not normal:
        return None
    host, _, path = normal.split("://", 1)[1].partition("/")
    segments = [unquote(s) for s in path.split("/") if s]
    if host == "smithery.ai" and segments[:1] == ["server"]:
        segments = segments[1:]
    elif host != "server.smithery.ai":
        return None
    name = segments[:2] if segments[:1] and segments[0].startswith("@") else segments[:1]
    return "/".join(name) if name and len(name[-1]) <= 100 and not name[-1].startswith("@") else None


def package_folder(name: str) -> str:
    """A package name as the folder the installer keeps it in (and the analyzer reads it from)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def verified_publisher(publishers: dict[str, str], repo_key: str | None, registry_name: str | None) -> str | None:
    """Seed 000's verified publisher: a known organisation by GitHub owner or registry namespace."""
    matches = []
    if repo_key and repo_key.startswith("github:"):
        matches.append("github:" + repo_key.removeprefix("github:").split("/")[0])
    if registry_name:
        namespace = registry_name.lower().split("/")[0]
        matches.append(f"namespace:{namespace}")
        if namespace.startswith("io.github."):
            matches.append("github:" + namespace.removeprefix("io.github."))
    return next((publishers[m] for m in matches if m in publishers), None)
