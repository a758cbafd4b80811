"""The kernels' sources run uncompiled: the reference the compiled modules are checked against.

The kernels are Cython's pure-Python mode: the same file is the compiled module (what imports
find, built by ``pip install``) and, loaded from its ``.py`` here, plain Python. Running both on
the same input and comparing every table checks what compiling may change: integer widths and
wrapping, float rounding, C types inferred for untyped locals.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import parsers.timeline.parser as parser_module
import parsers.timeline.tokens as tokens_module
from tests.conftest import ROOT


def load_source(relative: str, name: str) -> ModuleType:
    """The module at ``ROOT/relative`` imported from its ``.py`` (never the compiled extension)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.COMPILED is False
    return module


TOKENIZE = load_source("parsers/timeline/_tokenize.py", "reference_tokenize")
PAIR = load_source("parsers/timeline/_pair.py", "reference_pair")
KERNELS = load_source("analyzer/timeline/_kernels.py", "reference_kernels")
LATENESS = load_source("analyzer/timeline/_lateness_loops.py", "reference_lateness_loops")


@contextmanager
def reference_parser() -> Iterator[None]:
    """The timeline parser with the uncompiled tokenizer and pairer."""
    saved = tokens_module.T, parser_module.P
    tokens_module.T, parser_module.P = TOKENIZE, PAIR
    try:
        yield
    finally:
        tokens_module.T, parser_module.P = saved


def parsed_tables(path: Path, **kw: object) -> dict[str, object]:
    """Every table and fact of ``path`` parsed whole (compared with ``==``)."""
    from parsers.timeline import parse_timeline

    parsed = parse_timeline(path, **kw)  # type: ignore[arg-type]
    out: dict[str, object] = {name: table for name, table in parsed.tables.items()}
    out["issues"] = sorted((i.code, i.count, i.byte_offset) for i in parsed.issues)
    out["info"] = parsed.info
    return out
