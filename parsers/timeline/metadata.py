"""Metadata records of a Horovod timeline (``"ph": "M"``): the tensor name of a pid, its sort
index, and on pid 0 of >= 0.20.1 files the wall-clock start time.

Horovod writes a tensor's name into the JSON without escaping it, so a name holding a quote
makes the record invalid JSON; :func:`parse_metadata` still reads such a record by its fixed
shape.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_META_RE = re.compile(
    rb'^\{"name": "(?P<kind>process_name|process_sort_index)", "ph": "M", "pid": (?P<pid>\d+), '
    rb'"args": \{"name": "(?P<name>.*)"\}\}$',
    re.DOTALL,
)


def parse_metadata(raw: bytes) -> dict[str, Any] | None:
    """The record ``raw`` (one JSON object), or None when it cannot be read at all. A JSON object of any
    keys (hence ``dict[str, Any]``): the caller checks each key it reads."""
    try:
        rec = orjson.loads(raw)
    except orjson.JSONDecodeError:
        m = _META_RE.match(raw)  # an unescaped quote in a tensor name
        if m is None:
            return None
        return {
            "name": m["kind"].decode(),
            "ph": "M",
            "pid": int(m["pid"]),
            "args": {"name": m["name"].decode("utf-8", "replace")},
        }
    return rec if isinstance(rec, dict) else {}
