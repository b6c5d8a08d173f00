"""One catalog entry from the listings of one server (pure): which listing's facts win, what accumulates.

Field values come from the highest-priority source that has one (the official registry first, aggregators layered
on); external links, metrics and attributes accumulate. The entry's keys, canonical key first, are the identity
side's (pipeline.discover.merge).
"""

from __future__ import annotations

from pipeline.discover.launch import listing_launch
from pipeline.identity import is_public_endpoint, parse_github, remote_key, slug_id, source_rank
from pipeline.models import CatalogEntry, EnvVar, Listing, SourceRecord


def combine(listings: list[Listing], keys: list[str], aliases: dict[str, str]) -> CatalogEntry:
    """The catalog entry of one server from its listings; `keys` are its identity keys, the canonical one first."""
    ordered = sorted(listings, key=lambda listing: source_rank(listing.source))  # stable: a source's own order is kept
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
        keys=list(keys),
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
