"""The JSON Schema of the report, generated from :mod:`analyzer.report.types`.

``python -m analyzer.report.json_schema > analyzer/report/report.schema.json`` writes it (and
:func:`compare_schema` the one of ``compare -f json``, ``analyzer/compare/compare.schema.json``);
``tests/test_docs.py`` fails when the committed file differs. The types use a small part of
Python's typing, and this module converts exactly that part: TypedDicts (every key
required: the report always writes every key), ``list[X]``, ``dict[str, X]``, ``X | None``,
``Literal[...]``, ``int``/``float``/``str``/``bool`` and :data:`typing.Annotated` dicts of
extra JSON Schema keywords. Every TypedDict becomes a ``$defs`` entry named after it.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from typing import Any, Literal, get_args, get_origin, get_type_hints, is_typeddict

from analyzer.report import types as report_types

#: a JSON Schema document or part: any JSON object, by the schema language's own definition (the one
#: ``dict[str, Any]`` of this module)
JsonSchema = dict[str, Any]

_SCALARS: dict[Any, JsonSchema] = {
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    bool: {"type": "boolean"},
}


def report_schema() -> JsonSchema:
    """The JSON Schema (draft 2020-12) of :class:`analyzer.report.types.ReportDocument`."""
    return schema_of(report_types.ReportDocument, "report.schema.json", "hvd-analyze report")


def compare_schema() -> JsonSchema:
    """The JSON Schema of :class:`analyzer.compare.types.CompareDocument` (``compare -f json``)."""
    from analyzer.compare.types import CompareDocument

    return schema_of(CompareDocument, "compare.schema.json", "hvd-analyze compare")


def schema_of(root_type: Any, name: str, title: str) -> JsonSchema:
    """The JSON Schema (draft 2020-12) of the TypedDict ``root_type``."""
    defs: JsonSchema = {}
    root = _typeddict(root_type, defs)
    defs.pop(root_type.__name__)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://hvd-analyze/{name}",
        "title": title,
        **root,
        "$defs": dict(sorted(defs.items())),
    }


def _typeddict(td: Any, defs: JsonSchema) -> JsonSchema:
    hints = get_type_hints(td, include_extras=True)
    props = {k: _schema(v, defs) for k, v in hints.items()}
    out: JsonSchema = {
        "type": "object",
        "additionalProperties": False,
        "required": list(hints),
        "properties": props,
    }
    if td.__doc__ and not td.__doc__.startswith(td.__name__ + "("):
        out["description"] = " ".join(td.__doc__.split())
    defs[td.__name__] = out
    return out


def _schema(tp: Any, defs: JsonSchema) -> JsonSchema:
    origin = get_origin(tp)
    if origin is typing.Annotated:
        base, *extra = get_args(tp)
        out = dict(_schema(base, defs))
        for e in extra:
            if isinstance(e, report_types.Schema):
                out.update(e.keywords)
        return out
    if is_typeddict(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # reserved: recursion
            _typeddict(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if origin in (types.UnionType, typing.Union):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"only X | None unions are supported: {tp}")
        inner = _schema(args[0], defs)
        if get_origin(args[0]) is Literal:
            return {"enum": [*inner["enum"], None]}
        if set(inner) == {"type"}:
            return {"type": [inner["type"], "null"]}
        return {"oneOf": [{"type": "null"}, inner]}
    if origin is Literal:
        values = list(get_args(tp))
        return {"const": values[0]} if len(values) == 1 else {"enum": values}
    if origin is list:
        return {"type": "array", "items": _schema(get_args(tp)[0], defs)}
    if origin is dict:
        key, value = get_args(tp)
        if key is not str:
            raise TypeError(f"JSON object keys are strings: {tp}")
        return {"type": "object", "additionalProperties": _schema(value, defs)}
    if tp in _SCALARS:
        return dict(_SCALARS[tp])
    raise TypeError(f"no JSON Schema for {tp!r}")


def main() -> None:
    json.dump(report_schema(), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
