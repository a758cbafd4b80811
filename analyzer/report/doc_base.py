"""What every part of the report's types shares: :class:`Schema` (extra JSON Schema keywords of an
:data:`typing.Annotated` type) and the common scalar types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from parsers.nccl.error_classes import CLASSES


@dataclass(frozen=True, eq=False)  # hashed by identity: typing hashes the metadata of Annotated
class Schema:
    """Extra JSON Schema keywords of an :data:`typing.Annotated` type."""

    keywords: dict[str, Any]


Count = Annotated[int, Schema({"minimum": 0})]
Severity = Literal["info", "warning", "critical"]
ErrorClass = Annotated[str, Schema({"enum": list(CLASSES)})]
