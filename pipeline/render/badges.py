"""Badge SVGs in the shields.io flat style: accessible, escaped, sized to their text."""

from __future__ import annotations

from xml.sax.saxutils import escape

GRADE_COLOURS = {
    "A+": "#4c1", "A": "#97ca00", "B": "#a4a61d", "C": "#dfb317", "D": "#fe7d37", "F": "#e05d44", None: "#9f9f9f",
}
# Advance widths of Verdana at 11px (the shields font) for ASCII; others use the widest common glyph.
_NARROW = {"i": 3.1, "j": 3.4, "l": 3.1, "I": 4.2, "f": 3.9, "t": 4.3, "r": 4.7, " ": 3.9, ".": 3.9, ",": 3.9, ":": 4.6,
           "(": 5.0, ")": 5.0, "/": 5.0, "-": 4.6, "+": 9.2, "%": 12.0}
_WIDE = {"m": 10.7, "w": 9.0, "M": 10.5, "W": 11.9, "@": 11.0}


def text_width(text: str) -> float:
    width = 0.0
    for char in text:
        if char in _NARROW:
            width += _NARROW[char]
        elif char in _WIDE:
            width += _WIDE[char]
        elif char.isdigit():
            width += 7.0
        elif char.isupper():
            width += 7.5
        elif char.isascii():
            width += 6.6
        else:
            width += 11.0
    return width


def badge_svg(label: str, message: str, colour: str) -> str:
    label_w = round(text_width(label) + 10)
    message_w = round(text_width(message) + 10)
    total = label_w + message_w
    title = escape(f"{label}: {message}")
    label_x, message_x = label_w * 5, (label_w + message_w / 2) * 10
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" aria-label="{escape(title, {chr(34): "&quot;"})}">'
        f"<title>{title}</title>"
        '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
        '<stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{total}" height="20" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{label_w}" height="20" fill="#555"/>'
        f'<rect x="{label_w}" width="{message_w}" height="20" fill="{escape(colour)}"/>'
        f'<rect width="{total}" height="20" fill="url(#s)"/></g>'
        '<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="110">'
        f'<text aria-hidden="true" x="{label_x}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)">{escape(label)}</text>'
        f'<text x="{label_x}" y="140" transform="scale(.1)">{escape(label)}</text>'
        f'<text aria-hidden="true" x="{message_x:.0f}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)">{escape(message)}</text>'
        f'<text x="{message_x:.0f}" y="140" transform="scale(.1)">{escape(message)}</text></g></svg>'
    )


def score_badge(composite: float | None, grade: str | None, indicator: str) -> str:
    return badge_svg("mcp score", _message(composite, grade, indicator), GRADE_COLOURS.get(grade, GRADE_COLOURS[None]))


def _message(composite: float | None, grade: str | None, indicator: str) -> str:
    return f"{grade} {composite:.1f} ({indicator})" if composite is not None and grade else "unscored"


def shields_endpoint(composite: float | None, grade: str | None, indicator: str) -> dict[str, object]:
    """The shields.io endpoint-badge JSON, for those who prefer shields' rendering and caching."""
    return {"schemaVersion": 1, "label": "mcp score", "message": _message(composite, grade, indicator),
            "color": GRADE_COLOURS.get(grade, GRADE_COLOURS[None]).lstrip("#")}


def embed_snippets(site_url: str, server_id: str) -> dict[str, str]:
    badge, page = f"{site_url}badge/{server_id}.svg", f"{site_url}servers/{server_id}.html"
    return {
        "markdown": f"[![MCP score]({badge})]({page})",
        "html": f'<a href="{page}"><img src="{badge}" alt="MCP score"></a>',
        "shields": f"https://img.shields.io/endpoint?url={site_url}badge/{server_id}.json",
    }
