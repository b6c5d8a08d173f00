"""MCP's two protocol eras in plain words, for every place that shows an era verdict: a server page, a board's legend,
the outside-in status chips.

The legacy era is the `initialize` handshake and the session it opens (protocol versions 2024-11-05 to 2025-11-25); the
modern era (2026-07-28) has no handshake and no session: a client asks `server/discover`, and every request carries its
version. Clients are mid-migration, so a server that answers one era only fails the clients that speak only the other.
A reader who meets "legacy only" beside an official reference server needs the sentence that says what that means.
"""

from __future__ import annotations

LEGACY = "the legacy handshake (initialize, MCP 2024-11-05 to 2025-11-25)"
MODERN = "the modern handshake (server/discover, MCP 2026-07-28)"

ERAS = ("MCP's legacy era opens a session with the initialize handshake (protocol versions 2024-11-05 to 2025-11-25); the modern era, "
        "2026-07-28, has no session: a client asks server/discover. Clients are moving from one to the other")

# What it means for a client, by which era answered: (modern, legacy).
MEANING = {
    (True, True): "Clients old and new can connect.",
    (False, True): "Clients that fall back to initialize, as most do today, connect; one that speaks only 2026-07-28 cannot.",
    (True, False): "Clients that speak 2026-07-28 connect; older clients and SDKs, which only send initialize, cannot.",
    (False, False): "No MCP client could open a session.",
}

# The headline board's Era column, said once under the board.
ERA_COLUMN = ("Era", "the protocol era of the probe's session: legacy is the initialize handshake of MCP 2024-11-05 to 2025-11-25, "
                     "modern is server/discover of MCP 2026-07-28; a server's page says whether the other era answers too")


def era_sentence(modern: bool | None, legacy: bool | None, session_era: str | None = None) -> str | None:
    """What the probe tried, what answered and what that means for a client; None when nothing about eras was measured.

    `modern` and `legacy` are the dual-era negotiation's answers (None: not asked); `session_era` is the era of the probe's
    own session, all that is known when the negotiation did not run."""
    if modern is not None and legacy is not None:
        if modern and legacy:
            return f"We tried both protocol eras and both answered: {LEGACY} and {MODERN}. {MEANING[True, True]}"
        if not modern and not legacy:
            return f"We tried both protocol eras and neither answered: not {LEGACY}, nor {MODERN}. {MEANING[False, False]}"
        answered, failed = (MODERN, LEGACY) if modern else (LEGACY, MODERN)
        return f"We tried both protocol eras: {answered} answered, {failed} did not. {MEANING[modern, legacy]}"
    known = "modern" if modern else "legacy" if legacy else session_era
    if known in ("modern", "legacy"):
        answered, other = (MODERN, "legacy") if known == "modern" else (LEGACY, "modern")
        return f"{answered[0].upper()}{answered[1:]} answered; whether the {other} one does too was not measured."
    return None
