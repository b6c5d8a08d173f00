"""The catalog plan is decided without a database: given the stored state and the merged entries, the writes."""

from __future__ import annotations

from datetime import timedelta

from pipeline import store
from pipeline.discover.merge import merge_listings
from pipeline.discover.plan import plan_catalog
from pipeline.models import Listing
from tests.conftest import NOW

EMPTY = store.CatalogState(servers={}, keys={}, publishers={"github:stripe": "Stripe"})


def entries(*listings: Listing):
    return merge_listings(list(listings))


def listing(source: str, repo: str, **fields) -> Listing:
    return Listing(source=source, key=repo, name=repo.split("/")[-1], repository=f"https://github.com/{repo}", raw={"key": repo}, **fields)


def test_a_new_server_is_an_insert_with_its_keys_and_records():
    plan = plan_catalog(EMPTY, entries(listing("glama", "stripe/agent"), listing("pulsemcp", "stripe/agent")), ["glama", "pulsemcp"], NOW)
    assert [row["id"] for row in plan.inserts] == ["stripe--agent"]
    row = plan.inserts[0]
    assert row["verified_publisher"] == "Stripe" and row["sources"] == '["glama","pulsemcp"]' and row["is_active"] == 1
    assert plan.keys == {"github:stripe/agent": "stripe--agent", "glama:stripe/agent": "stripe--agent", "pulsemcp:stripe/agent": "stripe--agent"}
    assert [(server_id, record.source) for server_id, record in plan.records] == [("stripe--agent", "pulsemcp"), ("stripe--agent", "glama")]
    assert plan.updates == {}
    assert plan.counts == {"new": 1, "updated": 0, "unchanged": 0, "deactivated": 0, "merged": 0}


def test_a_source_that_ran_without_a_server_deactivates_it_and_the_plan_says_so(db):
    first = plan_catalog(store.catalog_state(db), entries(listing("glama", "acme/a"), listing("glama", "acme/b")), ["glama"], NOW)
    store.apply_catalog_plan(db, first)
    state = store.catalog_state(db)
    later = NOW + timedelta(days=1)
    plan = plan_catalog(state, entries(listing("glama", "acme/a")), ["glama"], later)
    assert plan.inserts == [] and plan.keys == {}
    assert plan.updates["acme--b"] == {"sources": "[]", "is_active": 0, "deactivated_at": store.iso(later)}
    assert plan.counts == {"new": 0, "updated": 0, "unchanged": 1, "deactivated": 1, "merged": 0}
    assert store.catalog_state(db) == state  # planning wrote nothing
    assert store.apply_catalog_plan(db, plan) == (plan.counts, [])
    assert [s.id for s in store.active_servers(db)] == ["acme--a"]
