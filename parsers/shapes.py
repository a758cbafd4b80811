"""What the parsers' fact shapes share with the report's JSON types: :class:`Schema` (extra JSON Schema
keywords riding on an :data:`typing.Annotated` type) and :data:`Count`.

A fact a parser writes into the manifest (a timeline's status, a log's line counts, a trace's rank) is
declared once, as a ``TypedDict`` next to its parser; the report (:mod:`analyzer.report.types`) uses
that declaration as it is, and its JSON Schema is generated from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any


@dataclass(frozen=True, eq=False)  # hashed by identity: typing hashes the metadata of Annotated
class Schema:
    """Extra JSON Schema keywords of an :data:`typing.Annotated` type."""

    keywords: dict[str, Any]  # JSON Schema keywords: any JSON value, by the schema's own definition


Count = Annotated[int, Schema({"minimum": 0})]
