"""The Jinja environment pages are rendered with, and where the site's templates, static files and methodology are."""

from __future__ import annotations

from collections.abc import Sequence

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from pipeline.assets import TEMPLATES
from pipeline.clean import isolate_bidi
from pipeline.models import RubricInfo
from pipeline.render.boards import LISTED_BOARD, cell
from pipeline.render.values import VISIBILITY_ICONS


class _DictFirstEnvironment(Environment):
    """Rows in page contexts are plain dicts: look `row.name` up as a key first, not after a failed attribute lookup.

    Jinja's default tries getattr, catches the AttributeError, then subscripts; on a server page that
    costs a third of the render time. Methods (`.items()`, `.get()`) still resolve when no key has their name.
    """

    def getattr(self, obj, attribute):  # noqa: A003 - Jinja's hook
        if type(obj) is dict:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


def _isolated(value):
    """Every value a template prints passes here before it is escaped: text that holds bidi controls (a server's name,
    a tool description) is isolated, so a U+202E in it cannot reorder the page around it. Our own markup passes as is."""
    return isolate_bidi(value) if type(value) is str else value


UNMEASURED = Markup(" class=u")
HINTS = (("read_only", "read-only"), ("destructive", "destructive"), ("idempotent", "idempotent"), ("open_world", "open-world"))
# A tool's four behaviour hints, by declared value (True, False, not declared): made once, looked up per tool. The table's
# legend says what ✗ and ? mean, instead of a tooltip on each of a page's ~30 hints (deviation 107).
_HINT_SPANS = {
    (key, value): Markup(f'<i class={"u" if value is None else "t" if value else "f"}>{label}{"?" if value is None else "" if value else " ✗"}</i> ')
    for key, label in HINTS for value in (None, True, False)
}


def hints(annotations: dict) -> Markup:
    return Markup("").join(_HINT_SPANS[key, annotations[key]] for key, _ in HINTS)


def sections(dimensions: list[dict]) -> list[tuple[str, dict]]:
    """A rule table's sections: (heading, dimension) for each dimension with rules or not applicable, and one section for a run of
    dimensions not applicable for the same reason, headed by all their labels (a stdio server's remote card: seven, one reason)."""
    found: list[tuple[str, dict]] = []
    for d in dimensions:
        if not d["rules"] and d["status"] != "not_applicable":
            continue
        last = found[-1][1] if found else None
        if (last and not d["rules"] and not last["rules"] and d["status"] == last["status"] == "not_applicable"
                and d["reason"] == last["reason"]):
            found[-1] = (f"{found[-1][0]} · {d['label']}", last)
        else:
            found.append((d["label"], d))
    return found


def spans(rules: list[dict]) -> list[tuple[dict, int]]:
    """Each rule with how many rows its reason cell spans: a run of rules giving the same reason says it once, in one cell spanning the
    run (an unreachable server's eight metadata rules: one reason); 0 for a row whose reason the cell above already spans (deviation 134)."""
    found: list[tuple[dict, int]] = []
    start = 0
    for i, rule in enumerate(rules):
        if i and rule["reason"] == rules[start]["reason"]:
            found[start] = (rules[start], found[start][1] + 1)
            found.append((rule, 0))
        else:
            start = i
            found.append((rule, 1))
    return found


def environment(rubrics: Sequence[RubricInfo]) -> Environment:
    """The environment every page is rendered in; the navigation links each board other than the headline's (the front page)."""
    env = _DictFirstEnvironment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html", "xml", "svg", "j2"], default_for_string=True),
        undefined=StrictUndefined,
        auto_reload=False,  # templates do not change during a build: no stat per page to check them
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_isolated,
    )
    env.filters["score"] = lambda v: "–" if v is None else f"{v:.1f}"
    # A rule row's points and its name as words: one call each instead of a format, a format and a replace
    # (a server page has about 85 rule rows, and filter calls are most of their cost).
    env.filters["points"] = lambda r: f"{r['points']:.1f} / {r['max_points']:.0f}" if r["measured"] else "not measured"
    env.filters["words"] = lambda name: name.replace("_", " ")
    env.filters["unmeasured"] = lambda r: "" if r["measured"] else UNMEASURED  # a class on the rows that need one, no empty ones
    env.filters["hints"] = hints
    env.filters["sections"] = sections
    env.filters["spans"] = spans
    env.globals.update(cell=cell, icons=VISIBILITY_ICONS, listed_board=LISTED_BOARD, boards=[r for r in rubrics if not r.headline])
    return env
