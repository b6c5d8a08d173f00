"""One catalog entry from the listings of one server (pure): whose facts win, what accumulates, which endpoint is probed.

Precedence (methodology deviations 25, 76, 77): a vendor's own listings before any republication of them by an
aggregator; then by source (pipeline.identity.SOURCE_PRIORITY); then within a source the newest listing first (its
`updated_at`, the date the source gives it); undated listings after the dated ones of their source, in the source's
own order. A single-valued field (name, description, repository, homepage, registry name) comes from the first
listing in that order that has one; links, metrics and attributes accumulate, the first listing's value winning a
name; each source's categories accumulate over its listings.

Nothing is dropped (deviation 78): remotes, packages and environment variables accumulate across every listing,
deduplicated (a remote by its normalised URL, a package by registry and name, a variable by name), the first in
precedence keeping its details. The endpoint we measure is chosen from all of them (deviation 77): a public remote
of the vendor's, else the launch of a package, else a public remote on an aggregator's proxy; it is listed first.

The entry's identity keys, canonical key first, are the identity side's (pipeline.discover.merge).
"""

from __future__ import annotations

from typing import Callable, Hashable, TypeVar
from urllib.parse import urlsplit

from pipeline.discover.launch import listing_launch
from pipeline.identity import is_public_endpoint, normalise_url, package_identity, parse_github, remote_key, slug_id, source_rank
from pipeline.models import CatalogEntry, LaunchSpec, Listing, Package, Remote, SourceRecord

# Aggregators that host proxies of other vendors' servers, by domain: their registry namespace is the domain reversed
# (`ai.smithery/*`), their proxies are on the domain or a subdomain of it (`server.smithery.ai`).
AGGREGATOR_DOMAINS = ("smithery.ai", "waystation.ai")
AGGREGATOR_NAMESPACES = tuple(".".join(reversed(domain.split("."))) for domain in AGGREGATOR_DOMAINS)

LISTS = ("remotes", "packages", "env_vars")  # what accumulates across listings
T = TypeVar("T")


def is_republication(listing: Listing) -> bool:
    """A third party's republication of a server: a registry entry in an aggregator's namespace (`ai.smithery/...`)."""
    namespace = (listing.registry_name or "").split("/", 1)[0].strip().lower()
    return namespace in AGGREGATOR_NAMESPACES


def on_aggregator(url: str) -> bool:
    """An endpoint an aggregator hosts (its proxy of someone's server): its host is an aggregator's domain or under it."""
    normal = normalise_url(url)
    host = normal.split("://", 1)[1].split("/", 1)[0].split(":", 1)[0] if normal else ""
    return any(host == domain or host.endswith(f".{domain}") for domain in AGGREGATOR_DOMAINS)


def precedence(listings: list[Listing]) -> list[Listing]:
    """The listings in the order their facts win (see the module's docstring); a stable sort keeps a source's own order
    among listings of one date, and among undated ones."""
    return sorted(listings, key=lambda listing: (
        is_republication(listing), source_rank(listing.source), listing.updated_at is None,
        -listing.updated_at.timestamp() if listing.updated_at else 0.0))


def current(ordered: list[Listing]) -> list[Listing]:
    """The listings in precedence order, older versions of one record trimmed. Listings of one source with one key are one
    record at different times (the registry's 2025-05 seed and its 2025-12 dump); when the newest is dated, an older
    version fills only what the newer ones leave empty: a single field, or a whole list (remotes, packages with their
    launch, environment variables) none of them has. Undated listings of one key (a list naming a server twice) all count."""
    if len(ordered) < 2:
        return ordered
    newest: dict[tuple[str, str], Listing] = {}
    given: dict[tuple[str, str], set[str]] = {}
    kept = []
    for listing in ordered:
        record = (listing.source, listing.key.lower())
        first = newest.setdefault(record, listing)
        has = {field for field in LISTS if getattr(listing, field)}
        earlier = given.setdefault(record, set())
        stale = has & earlier if first is not listing and first.updated_at is not None else set()
        update: dict[str, object] = {field: [] for field in stale} | ({"launch": None} if "packages" in stale else {})
        kept.append(listing.model_copy(update=update) if update else listing)
        earlier |= has
    return kept


def combine(listings: list[Listing], keys: list[str], aliases: dict[str, str]) -> CatalogEntry:
    """The catalog entry of one server from its listings; `keys` are its identity keys, the canonical one first. Every
    listing's record is kept, superseded versions included."""
    everything = precedence(listings)
    ordered = current(everything)
    canonical = keys[0]
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
        if listing.categories:  # a list naming a server under two headings: both
            categories[listing.source] = list(dict.fromkeys([*categories.get(listing.source, []), *listing.categories]))
    remotes = _unique([(r, listing.source) for listing in ordered for r in listing.remotes], _remote_identity)
    packages = _unique([(p, listing.source) for listing in ordered for p in listing.packages], _package_identity)
    first_launch = next(((found, listing.source) for listing in ordered if (found := listing_launch(listing.launch, listing.packages))),
                        None)
    chosen, launch = choose_endpoint([r for r, _ in remotes], first_launch[0] if first_launch else None)
    if chosen is not None:
        remotes.sort(key=lambda pair: pair[0] is not chosen)  # the endpoint we measure first; the others in precedence
        provenance["remote_url"] = remotes[0][1]
    if launch is not None and first_launch is not None:
        provenance["launch"] = first_launch[1]
    # A republication's variables are its proxy's (Smithery's `Authorization`): they count only when we measure a proxy.
    proxied = chosen is not None and on_aggregator(chosen.url)
    variables = _unique([(v, listing.source) for listing in ordered if proxied or not is_republication(listing) for v in listing.env_vars],
                        lambda v: v.name)
    for field, items in (("remotes", remotes), ("packages", packages), ("env_vars", variables)):
        if items:
            provenance[field] = items[0][1]
    repo = parse_github(values.get("repository"))  # type: ignore[arg-type]
    return CatalogEntry(
        id=slug_id(canonical),
        name=str(values.get("name") or values.get("registry_name") or canonical),
        description=values.get("description"),  # type: ignore[arg-type]
        repository=values.get("repository"),  # type: ignore[arg-type]
        subpath=values.get("subpath"),  # type: ignore[arg-type]
        homepage=values.get("homepage"),  # type: ignore[arg-type]
        transport=launch.transport if launch else chosen.transport if chosen else "stdio",
        remote_url=chosen.url if chosen else None,
        launch=launch,
        env_vars=[v for v, _ in variables],
        external_links=links,
        repo_key=repo.repo_key if repo else None,
        registry_name=values.get("registry_name"),  # type: ignore[arg-type]
        packages=[p for p, _ in packages],
        remotes=[r for r, _ in remotes],
        metrics=metrics,
        attributes=attributes,
        source_categories=categories,
        provenance=provenance,
        keys=list(keys),
        derived_id=True,
        records=[SourceRecord(source=listing.source, key=listing.key, payload=listing.raw) for listing in everything],
    )


def choose_endpoint(remotes: list[Remote], launch: LaunchSpec | None) -> tuple[Remote | None, LaunchSpec | None]:
    """(the remote we probe, or the launch we start): a public remote of the vendor's, else the launch, else a public remote
    on an aggregator's proxy, else any remote (a private or template address, probed only where private ones are
    allowed). Among remotes of one kind, Streamable HTTP before SSE, then in precedence order."""
    public = [r for r in remotes if is_public_endpoint(remote_key(r.url) or "")]
    vendor = [r for r in public if not on_aggregator(r.url)]
    if vendor:
        return _preferred(vendor), None
    if launch is not None:
        return None, launch
    return (_preferred(public or remotes), None) if remotes else (None, None)


def _preferred(remotes: list[Remote]) -> Remote:
    return next((r for r in remotes if r.transport == "streamable-http"), remotes[0])


def _unique(items: list[tuple[T, str]], identity: Callable[[T], Hashable]) -> list[tuple[T, str]]:
    """Items (with the source that listed them) once each by `identity`, the first one kept."""
    seen: dict[Hashable, tuple[T, str]] = {}
    for item, source in items:
        seen.setdefault(identity(item), (item, source))
    return list(seen.values())


def _remote_identity(remote: Remote) -> tuple[str, str]:
    """A remote by its normalised URL and its query: the query is no identity of a server, but it is part of the
    endpoint (huggingface.co/mcp and huggingface.co/mcp?login answer differently), so both are kept."""
    try:
        query = urlsplit(remote.url.strip()).query
    except ValueError:  # a malformed URL (an unclosed IPv6 bracket) is kept by its text alone
        query = ""
    return remote_key(remote.url) or remote.url.strip(), query


def _package_identity(package: Package) -> tuple[str, str]:
    return package_identity(package.registry, package.identifier)


def _fields(listing: Listing, aliases: dict[str, str]) -> dict[str, object]:
    """A listing's single-valued fields, as the catalog stores them."""
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
    }
