"""What every part of the report's types shares: :class:`Schema` (extra JSON Schema keywords of an
:data:`typing.Annotated` type) and the common scalar types."""

from __future__ import annotations

from typing import Literal

from parsers.nccl.error_classes import ErrorClass as ErrorClass
from parsers.shapes import Count as Count
from parsers.shapes import Schema as Schema

Severity = Literal["info", "warning", "critical"]
