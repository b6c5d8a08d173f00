"""The kinds of value pages show (numbers as stored, scores, grades, visibility tiers, transports), and the base of page models."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, WithJsonSchema

# A number published exactly as stored (an integer stays an integer), described as a JSON number. Serialised as it is,
# with no type check: a full build publishes some 8 million of them, and a union of int and float costs a third more time.
Number = Annotated[Any, WithJsonSchema({"type": "number"})]
Percent = Annotated[Any, WithJsonSchema({"type": "number", "minimum": 0, "maximum": 100})]
Score = Percent | None
Day = Annotated[str, WithJsonSchema({"type": "string", "format": "date"})]  # an ISO date, as stored
Grade = Literal["A+", "A", "B", "C", "D", "F"] | None
Visibility = Literal["complete", "verified", "assessed", "limited", "unscored"]
Transport = Literal["stdio", "streamable-http", "sse"]


class Context(BaseModel):
    """A page model: built with model_construct from our own rows (see pages.py), so its fields are all it may hold."""

    model_config = ConfigDict(extra="forbid")


VISIBILITY_ORDER = ["complete", "verified", "assessed", "limited", "unscored"]
VISIBILITY_ICONS = {"complete": "◉", "verified": "◎", "assessed": "◐", "limited": "◔", "unscored": "○"}
