"""docs/schema.md documents exactly the real schema: every table and view, every column, every type (ANY: a view's computed column)."""

from __future__ import annotations

import re

from pipeline.assets import SCHEMA_DOC
from pipeline.store import open_db


def documented_schema(text: str) -> dict[str, list[tuple[str, str]]]:
    tables: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in text.splitlines():
        heading = re.match(r"^###\s+(\w+(?: \(view\))?)\s*$", line)
        if heading:
            current = heading.group(1)
            tables[current] = []
            continue
        row = re.match(r"^\|\s*(\w+)\s*\|\s*([A-Z]+)\s*\|", line)
        if current and row:
            tables[current].append((row.group(1), row.group(2)))
    return tables


def test_schema_documentation_matches_database(tmp_path):
    db = open_db(tmp_path / "schema.db")
    real = {t: [(c.name, c.type) for c in db[t].columns] for t in db.table_names()}
    real |= {f"{v} (view)": [(c.name, c.type or "ANY") for c in db[v].columns] for v in db.view_names()}
    documented = documented_schema(SCHEMA_DOC.read_text())
    assert sorted(documented) == sorted(real), "tables documented vs real"
    for table, columns in real.items():
        assert documented[table] == columns, f"columns of {table} differ from docs/schema.md"


def test_the_doc_parser_notices_drift():
    text = "### servers\n| column | type | meaning |\n| --- | --- | --- |\n| id | TEXT | key |\n"
    assert documented_schema(text) == {"servers": [("id", "TEXT")]}
    assert documented_schema(text.replace("TEXT", "INTEGER")) != {"servers": [("id", "TEXT")]}


def test_datasette_metadata_documents_every_table_and_column(tmp_path):
    from pipeline.datasette_metadata import metadata

    db = open_db(tmp_path / "meta.db")
    described = metadata("meta")["databases"]["meta"]
    for table in db.table_names() + db.view_names():  # Datasette documents views under "tables" too
        assert described["tables"][table]["description"], table
        assert set(described["tables"][table]["columns"]) == {c.name for c in db[table].columns}, table
    assert described["tables"]["servers"]["description"].startswith("The catalog")
    for name, query in described["queries"].items():
        db.execute(query["sql"], {p: "" if p != "limit" else 5 for p in query.get("params", [])}).fetchall()  # every canned query runs
