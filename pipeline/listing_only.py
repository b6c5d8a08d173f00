"""Listing-only servers: a listing names them, but gives nothing the scoreboard can examine (methodology deviation 80).

Shared by the stages that pass them over (analyze, probe, judge, score) and by the build, which says so on their pages
and lets a reader hide them on the boards. In the source snapshots most of them come from Smithery's 2025 list dump,
whose items carry a name, a description and Smithery's page, and nothing else.
"""

from __future__ import annotations

from pipeline.models import ServerFields

NOT_MEASURED = ("nothing could be measured: no listing names a source repository, a published package or a remote endpoint, "
                "so there is no source to analyse, no package to start and no endpoint to probe")


def listing_only(server: ServerFields) -> bool:
    """No repository (on any host), no package (of any registry, nor a way to start one) and no remote endpoint (of any
    kind, a Smithery deployment URL too): whatever else the listings say, there is nothing to examine.

    A homepage and the listings' own pages (external_links) do not count: they are web pages about the server, and
    nothing reads them. A remote on a private or placeholder address does count: the seed's Staging Endpoint flag
    judges exactly that listing, and a probe allowed private addresses can reach it."""
    return not (server.repository or server.packages or server.launch is not None or server.remote_url or server.remotes)
