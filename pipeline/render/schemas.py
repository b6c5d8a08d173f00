"""The JSON Schemas of the public API files, generated from the models they are written from, and published beside them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from pipeline.models import RubricInfo
from pipeline.render.board_pages import BoardFile, ChangesFile, ServersFile
from pipeline.render.pages import ServerPage


class _Untitled(GenerateJsonSchema):
    """No title per field: each would only repeat the field's name."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    generated = model.model_json_schema(mode="serialization", schema_generator=_Untitled)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": name, **generated}


def _nullable(schema: dict[str, Any]) -> bool:
    return any(option.get("type") == "null" for option in schema.get("anyOf", ())) or "null" in (schema.get("type") or ())


def _nulls_left_out(schema: Any) -> Any:
    """A file written without its nulls (a server's, deviation 106): a field that may be null is not required."""
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict) and "required" in schema:
            schema["required"] = [name for name in schema["required"] if not _nullable(properties.get(name, {}))]
        for value in schema.values():
            _nulls_left_out(value)
    elif isinstance(schema, list):
        for value in schema:
            _nulls_left_out(value)
    return schema


def published(rubrics: Sequence[RubricInfo]) -> dict[str, dict[str, Any]]:
    """Each schema by file name; a board's rubric, and a server page's other rubrics, are named by the rubrics the site shows."""
    others = [r.name for r in rubrics if not r.headline]
    board = _schema(BoardFile, "board.schema.json")
    board["properties"]["rubric"]["enum"] = others
    server = _nulls_left_out(_schema(ServerPage, "server.schema.json"))
    server["$defs"]["RubricSection"]["properties"]["rubric"]["enum"] = others
    changes = _schema(ChangesFile, "changes.schema.json")
    changes["properties"]["rubric"]["enum"] = [r.name for r in rubrics if r.headline]
    return {"board.schema.json": board, "changes.schema.json": changes, "server.schema.json": server,
            "servers.schema.json": _schema(ServersFile, "servers.schema.json")}
