"""Deduplication (seed 000): listings from every source merged into one catalog entry per server.

Each listing has identity keys: its repository (normalised GitHub URL plus subpath, renames
followed), its official-registry name, its remote URLs, its source's own id, its npm and PyPI
packages and the Smithery names it carries (pipeline.discover.joins). Listings that
share any key are one server (union-find). The entry's canonical key is the best of its keys:
GitHub repository first, then, for hosted-only servers, the remote URL, then the registry name,
then the rest. Field values come from the highest-priority source that has one (the official
registry first, aggregators layered on); external links, metrics and attributes accumulate.
Pure: the same listings, aliases and known keys always give the same entries.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from pipeline.clean import clean_text
from pipeline.discover.joins import keys_of_two_repositories, package_keys, smithery_keys, without_shared_keys
from pipeline.discover.launch import listing_launch
from pipeline.identity import is_public_endpoint, parse_github, remote_key, repository_key, slug_id, source_rank
from pipeline.models import CatalogEntry, EnvVar, Listing, SourceRecord


def listing_keys(listing: Listing, aliases: dict[str, str]) -> list[str]:
    """Every identity key of one listing, its own primary key first.

    Primary: the GitHub repository; for a hosted-only server its remote URL; then the registry name;
    a repository elsewhere (GitLab, …); then the source's own id. Remote URLs that are not public
    (localhost, private addresses, placeholders) are no identity: many servers list the same one;
    nor are a listing's remotes when they span several hosts. Keys are in their stored form (cleaned
    as the store cleans them), so they match the stored catalog's keys.
    """
    repo = repository_key(listing.repository, listing.subfolder, aliases)
    github = [repo] if repo and repo.startswith("github:") else []
    before = repository_key(listing.repository, listing.subfolder)  # the pre-rename key still finds a stored server
    if github and before and before != repo:
        github.append(before)
    remotes = [k for k in (remote_key(r.url) for r in listing.remotes) if k and is_public_endpoint(k)]
    if len({k.split("://", 1)[1].split("/", 1)[0] for k in remotes}) > 1:
        remotes = []  # endpoints on several hosts under one name (a vendor's bundle): none of them is this listing's identity
    hosted_only = bool(remotes) and not listing.packages and not github
    keys = [*github, *(remotes if hosted_only else [])]
    if listing.registry_name:
        keys.append(f"registry:{listing.registry_name.lower()}")
    if repo and not github:
        keys.append(repo)
    keys += remotes
    keys.append(f"{listing.source}:{listing.key.lower()}")
    keys += package_keys(listing) + smithery_keys(listing)  # deviations 29, 72
    return list(dict.fromkeys(clean_text(key) for key in keys))


def canonical_key(keys: Iterable[str]) -> str:
    """The key a merged server is known by: its GitHub repository if it has one, else the first
    key of its highest-priority listing (remote URL for hosted-only, else registry name, …)."""
    ordered = list(keys)
    return next((k for k in ordered if k.startswith("github:")), ordered[0])


class _Groups:
    """Union-find over listing indexes that never joins two different GitHub repositories: a shared
    secondary key (a registry name, a remote URL) between two repositories is a data error, not
    one server."""

    def __init__(self, repos: list[str | None]) -> None:
        self.parent = list(range(len(repos)))
        self.repo = list(repos)

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb or (self.repo[ra] and self.repo[rb] and self.repo[ra] != self.repo[rb]):
            return
        low, high = min(ra, rb), max(ra, rb)
        self.parent[high] = low
        self.repo[low] = self.repo[low] or self.repo[high]


def merge_listings(listings: list[Listing], aliases: dict[str, str] | None = None, known_keys: Iterable[str] = ()) -> list[CatalogEntry]:
    """Group listings that share a key and merge each group into one entry, sorted by id.

    A listing's `weak_repository` (Smithery's qualifiedName read as owner/repo) joins only when some
    other listing, or the stored catalog (`known_keys`), names that repository for certain; it then
    counts as the listing's repository.
    """
    aliases = aliases or {}
    keys_of = [listing_keys(listing, aliases) for listing in listings]
    strong = {k for keys in keys_of for k in keys} | set(known_keys)
    listings = list(listings)
    for index, (listing, keys) in enumerate(zip(listings, keys_of)):
        guess = parse_github(listing.weak_repository)
        if guess is not None and not listing.repository and (key := guess.renamed(aliases).key) in strong:
            keys.insert(0, key)
            listings[index] = listing.model_copy(update={"repository": listing.weak_repository})
    groups = _Groups([keys[0] if keys[0].startswith("github:") else None for keys in keys_of])
    owner_of: dict[str, int] = {}
    ambiguous = keys_of_two_repositories(keys_of)  # deviation 72b
    for index, keys in enumerate(keys_of):
        for key in keys:
            if key in ambiguous:
                continue
            if key in owner_of:
                groups.union(owner_of[key], index)
            else:
                owner_of[key] = index
    members: dict[int, list[int]] = defaultdict(list)
    for index in range(len(listings)):
        members[groups.find(index)].append(index)
    keys_of = without_shared_keys(listings, keys_of, list(members.values()))
    entries = [_merge([(listings[i], keys_of[i]) for i in group], aliases) for group in members.values()]
    return sorted(entries, key=lambda e: e.id)


def _merge(group: list[tuple[Listing, list[str]]], aliases: dict[str, str]) -> CatalogEntry:
    group = sorted(group, key=lambda pair: source_rank(pair[0].source))  # stable: a source's own order is kept
    ordered = [listing for listing, _ in group]
    keys = list(dict.fromkeys(k for _, keys in group for k in keys))
    canonical = canonical_key(keys)
    keys.remove(canonical)
    values: dict[str, object] = {}
    provenance: dict[str, str] = {}
    for listing in ordered:
        for field, value in _fields(listing, aliases).items():
            if field not in values and value not in (None, "", []):
                values[field] = value
                provenance[field] = listing.source
    links: dict[str, str] = {}
    metrics: dict[str, float] = {}
    attributes: dict[str, object] = {}
    categories: dict[str, list[str]] = {}
    for listing in ordered:
        for name, url in listing.external_links.items():
            links.setdefault(name, url)
        for name, number in listing.metrics.items():
            metrics.setdefault(name, number)
        for name, value in listing.attributes.items():
            attributes.setdefault(name, value)
        if listing.categories:
            categories.setdefault(listing.source, list(dict.fromkeys(listing.categories)))
    remotes = values.get("remotes") or []
    first = min(remotes, key=lambda r: r.transport != "streamable-http") if remotes else None
    repo = parse_github(values.get("repository"))  # type: ignore[arg-type]
    # A server with a public endpoint is measured there; otherwise its package is started in the sandbox.
    launch = None if first and is_public_endpoint(remote_key(first.url) or "") else values.get("launch")
    if launch is None:
        provenance.pop("launch", None)
    return CatalogEntry(
        id=slug_id(canonical),
        name=str(values.get("name") or values.get("registry_name") or canonical),
        description=values.get("description"),  # type: ignore[arg-type]
        repository=values.get("repository"),  # type: ignore[arg-type]
        subpath=values.get("subpath"),  # type: ignore[arg-type]
        homepage=values.get("homepage"),  # type: ignore[arg-type]
        transport=launch.transport if launch else first.transport if first else "stdio",  # type: ignore[attr-defined]
        remote_url=first.url if first else None,
        launch=launch,  # type: ignore[arg-type]
        env_vars=values.get("env_vars") or [],  # type: ignore[arg-type]
        external_links=links,
        repo_key=repo.repo_key if repo else None,
        registry_name=values.get("registry_name"),  # type: ignore[arg-type]
        packages=values.get("packages") or [],  # type: ignore[arg-type]
        remotes=remotes,  # type: ignore[arg-type]
        metrics=metrics,
        attributes=attributes,
        source_categories=categories,
        provenance=provenance | ({"remote_url": provenance["remotes"]} if "remotes" in provenance else {}),
        keys=[canonical, *keys],
        derived_id=True,
        records=[SourceRecord(source=listing.source, key=listing.key, payload=listing.raw) for listing in ordered],
    )


def _fields(listing: Listing, aliases: dict[str, str]) -> dict[str, object]:
    ref = parse_github(listing.repository, listing.subfolder)
    if ref is not None:
        ref = ref.renamed(aliases)
        repository, subpath = ref.url, ref.subpath
    else:
        repository, subpath = (listing.repository or None), (listing.subfolder or None)
    return {
        "name": listing.name.strip() or None,
        "description": (listing.description or "").strip() or None,
        "repository": repository,
        "subpath": subpath,
        "homepage": listing.homepage,
        "registry_name": listing.registry_name,
        "remotes": listing.remotes,
        "packages": listing.packages,
        "env_vars": _unique_env(listing.env_vars),
        "launch": listing_launch(listing.launch, listing.packages),
    }


def _unique_env(variables: list[EnvVar]) -> list[EnvVar]:
    seen: dict[str, EnvVar] = {}
    for variable in variables:
        seen.setdefault(variable.name, variable)
    return list(seen.values())
