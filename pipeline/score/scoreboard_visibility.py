"""The `scoreboard` rubric's visibility tiers (seed 000): which dimensions apply to a server, which tier its scored
dimensions give, when Schema Interpretability runs, and the no-source limitation.

Applicability follows the seed's "Local vs Remote" table: Protocol Compliance needs probe data or signals inferred
from source, Reliability needs monitoring history; without them a dimension does not apply (its weight goes to the
others), so a local server with static data only is Assessed 3/3 and a remote one without history has 4 dimensions.
"""

from __future__ import annotations

from pipeline.models import DimensionScore
from pipeline.score.facts import Facts
from pipeline.score.inferred import inferred
from pipeline.score.signals import MIN_FAST_PROBES, has_package
from pipeline.visibility import at_least_assessed

STANDARD = ("schema_quality", "protocol_compliance", "reliability", "docs_maintenance", "security_hygiene")
INFERRED_SIGNALS = ("error_handling", "fuzz", "schema_validity", "auth_discovery")


def with_protocol_data(facts: Facts) -> str | None:
    """Seed 000: Protocol Compliance "requires probe data or source code inference signals"; a server never probed and
    with no protocol signal inferred from source does not have it (weight redistributed; a local server with static data
    only is Assessed 3/3). A probe that measured nothing leaves the dimension pending, its rules saying why."""
    if facts.probe is not None:
        return None
    if any((signal := inferred(facts, key)) is not None and signal.get("value") is not None for key in INFERRED_SIGNALS):
        return None
    return "not probed yet and no protocol signals inferred from source: left out, its weight goes to the other dimensions"


def monitored_remote(facts: Facts) -> str | None:
    """Seed 000: Reliability "requires accumulated probe history from ongoing monitoring" (10+ probes in 7 days); a remote
    server without it gets 4 dimensions, and a local server has none that says anything of the server."""
    if facts.server.is_local:
        return "local server started by the scoreboard: uptime and latency of our own process say nothing"
    if facts.fast.runs < MIN_FAST_PROBES:
        return f"no monitoring history yet ({facts.fast.runs} probes in 7 days, {MIN_FAST_PROBES} needed): its weight goes to the other dimensions"
    return None


def from_assessed(facts: Facts, dimensions: list[DimensionScore]) -> str | None:
    """Seed 000: the AI evaluation runs only "for servers with at least Assessed visibility" on the standard dimensions."""
    tier = standard_visibility(facts, dimensions)
    return None if at_least_assessed(tier) else f"runs only from Assessed visibility up; the standard dimensions give {tier}"


def standard_visibility(facts: Facts, dimensions: list[DimensionScore]) -> str:
    """verified / assessed / limited / unscored from the standard dimensions alone (seed 000's table): all applicable
    ones scored is Verified with live probe data, Assessed without; fewer is Limited (two or more) or Unscored."""
    scored = {d.name for d in dimensions if d.status == "scored" and d.name in STANDARD}
    applicable = {d.name for d in dimensions if d.status != "not_applicable" and d.name in STANDARD}
    if len(scored) < 2:
        return "unscored"
    if not applicable <= scored or no_source(facts):
        return "limited"  # seed 000: no-source servers are capped at Limited
    return "verified" if facts.probe is not None and facts.probe.reachable else "assessed"


def visibility(facts: Facts, dimensions: list[DimensionScore], composite: float | None) -> str:
    """Complete once Schema Interpretability is scored on top (it runs only from Assessed up), else the standard tier."""
    if any(d.name == "schema_interpretability" and d.status == "scored" for d in dimensions):
        return "complete"
    return standard_visibility(facts, dimensions)


# Seed 000: no-source servers "cannot score above the mid-range"; the seed's own caps name grades (Staging Endpoint 55,
# "Maximum C grade"), and 55 is the grade floor nearest the scale's middle (deviation 57).
NO_SOURCE_CAP = 55


def no_source(facts: Facts) -> str | None:
    """Why the server counts as without source code, or None. Without source: nothing to analyse (no repository, no
    package), or an analysis that found no source file to scan (a repository holding only a README). A source that
    exists but is not analysed yet, or could not be read this time, is not measured: never capped for it."""
    analysis = facts.analysis
    if analysis is not None and analysis.ok:
        scanned = analysis.metrics.get("behavioral", {})  # an analysis stored before the scan existed did read source
        if scanned is not None and scanned.get("value", 0) is not None:
            return None
        what = "the source analysis found no source file to scan"
    elif facts.server.repository or has_package(facts):
        return None
    else:
        what = "no repository or package is known: there is no source to analyse"
    return f"{what}: capped at {NO_SOURCE_CAP}, Limited visibility; publish the source so it can be analysed"
