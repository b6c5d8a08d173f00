"""The evidence database: the only code that knows table shapes. Callers write `store.<function>(db, …)`.

Every write that belongs together happens in one transaction, so an interrupted run leaves
what it had committed and nothing half-written. Every string written from outside is cleaned
first (pipeline.clean), deep through JSON evidence; a server whose rows the database still
refuses raises WriteRefused, with nothing of it written, for its stage to count and go on.
One module per concern: connection (open, check, migrate, copy), encoding, refusals,
migrations, catalog, runs, evidence, scores, fleet (cadence marks, rescore requests, retention), model transitions, and the
read models of the score stage (scoring) and the build (pages).
"""

from pipeline.store.catalog import (
    CatalogPlan,
    CatalogState,
    active_servers,
    apply_catalog_plan,
    catalog_state,
    classification_of,
    delist,
    delisted,
    lift_delisting,
    naming_keys,
    packages_due_for_downloads,
    record_problems,
    repo_aliases,
    save_aliases,
    save_download_counts,
)
from pipeline.store.connection import ScoreboardDatabaseError, backup, database_path, open_db, snapshot
from pipeline.store.encoding import cleaned_json, content_hash, dumps, in_chunks, iso, parse_iso
from pipeline.store.evidence import (
    fast_probe_minutes,
    judged_keys,
    latest_analyses,
    latest_analysis_ids,
    latest_probe,
    latest_probe_summaries,
    latest_probes,
    llm_answers,
    rate_limited_until,
    record_analysis,
    record_probe,
    save_judgements,
)
from pipeline.store.fleet import last_analysed, last_examined, last_rescore, mark_examined, prune_fast_runs, record_rescore, sandboxed_versions
from pipeline.store.pages import page_evidence, page_evidence_stamps
from pipeline.store.refusals import WriteRefused
from pipeline.store.runs import fail_run, finish_run, first_run_at, latest_runs, start_run
from pipeline.store.scores import CardRow, card_row, drop_cards, load_scores, score_cards, score_changes, visibilities, write_card_rows
from pipeline.store.scoring import ScoringEvidence, duplicate_descriptions, scoring_evidence
from pipeline.store.transitions import accepted_transitions, really_judged_servers, record_transition

__all__ = [
    "accepted_transitions", "active_servers", "apply_catalog_plan", "card_row", "CardRow", "catalog_state", "CatalogPlan", "CatalogState",
    "classification_of",
    "backup", "cleaned_json", "content_hash", "database_path", "delist", "delisted", "drop_cards", "dumps", "duplicate_descriptions", "fail_run",
    "fast_probe_minutes", "finish_run", "first_run_at", "in_chunks", "iso", "judged_keys", "last_analysed", "last_examined",
    "last_rescore", "latest_analyses", "latest_analysis_ids", "latest_probe", "latest_probe_summaries", "latest_probes", "latest_runs",
    "lift_delisting", "llm_answers", "load_scores", "mark_examined", "naming_keys", "open_db", "packages_due_for_downloads", "page_evidence",
    "page_evidence_stamps", "parse_iso", "prune_fast_runs", "rate_limited_until", "really_judged_servers", "record_analysis",
    "record_probe", "record_problems", "record_rescore", "record_transition", "repo_aliases", "sandboxed_versions", "save_aliases",
    "save_download_counts", "save_judgements", "score_cards",
    "score_changes", "ScoreboardDatabaseError", "scoring_evidence", "ScoringEvidence", "snapshot", "start_run", "visibilities",
    "write_card_rows", "WriteRefused",
]
