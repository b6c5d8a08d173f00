"""Model transitions (`scoreboard judge-transition`): each decision, accepted or refused, and the accepted ones the
methodology page publishes."""

from __future__ import annotations

import json

from sqlite_utils import Database

from pipeline.models import ModelTransition
from pipeline.store.encoding import cleaned_json, dumps, iso


def record_transition(db: Database, transition: ModelTransition) -> None:
    row = cleaned_json(transition)
    row.update(decided_at=iso(transition.decided_at), accepted=int(transition.accepted), quantiles=dumps(row["quantiles"]),
               servers=dumps(row["servers"]))
    with db.atomic():
        db["model_transitions"].insert(row)


def accepted_transitions(db: Database) -> list[ModelTransition]:
    """The accepted transitions, oldest first."""
    rows = db.query("select * from model_transitions where accepted = 1 order by decided_at, id")
    return [ModelTransition.model_validate({**{k: v for k, v in r.items() if k != "id"}, "quantiles": json.loads(r["quantiles"]),
                                            "servers": json.loads(r["servers"])}) for r in rows]


def really_judged_servers(db: Database) -> list[str]:
    """The active servers with a judgement by a real model of the panel (not the offline judge, not retired), sorted: a
    transition's population before the check that a judged text is still listed."""
    return [r[0] for r in db.execute("select distinct j.server_id from judgements j join servers s on s.id = j.server_id "
                                     "where j.offline = 0 and j.retired = 0 and s.is_active = 1 order by j.server_id").fetchall()]
