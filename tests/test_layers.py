"""The layout's rules that import-linter does not check: no import cycles, modules of a
readable size, no two modules whose names differ by a letter, faces that import cleanly.

(The layering itself — dashboards -> analyzer -> parsers, detectors and the timeline model
away from the store — is import-linter's, ``[tool.importlinter]`` in pyproject.toml, run by
the README's test command.)
"""

from __future__ import annotations

import difflib
import importlib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("parsers", "analyzer", "dashboards")
#: ~400 lines is the rule; the compiled kernels that scan bytes are the stated exceptions: each one Cython
#: translation unit (the timeline tokenizer with its JSON lexer and its fast pass over Horovod's own layout,
#: the NCCL line reader with its record scanner, whose two passes share the scanner and the row layout), so
#: that they inline into the scanning loop (split into modules, each call would cross a C module boundary)
MAX_LINES = 420
EXCEPTIONS = {
    "parsers/timeline/_tokenize.py": 800,
    "parsers/nccl/_lines.py": 690,
}


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return out


def test_no_import_cycles() -> None:
    """Counting every import: those inside functions (lazy) and under ``TYPE_CHECKING`` too, so that no
    module imports back into a package face that names it."""
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=False)
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_modules_are_of_a_readable_size() -> None:
    over = {}
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > EXCEPTIONS.get(rel, MAX_LINES):
            over[rel] = lines
    assert over == {}


def test_no_two_module_names_differ_by_a_letter() -> None:
    names = sorted({p.stem for p in _modules() if p.stem != "__init__"})
    close = [
        (a, b)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if len(a) > 3 and difflib.SequenceMatcher(None, a, b).ratio() > 0.9
    ]
    assert close == []


@pytest.mark.parametrize(
    "face",
    [
        "parsers",
        "parsers.timeline",
        "parsers.nccl",
        "analyzer",
        "analyzer.store",
        "analyzer.timeline",
        "analyzer.nccl",
        "analyzer.report",
    ],
)
def test_each_face_exports_what_it_lists(face: str) -> None:
    module = importlib.import_module(face)
    exported = getattr(module, "__all__", None)
    assert exported, f"{face} has no __all__"
    folder = ROOT / face.replace(".", "/")
    # a submodule of the same name would replace the lazy name once it is imported
    submodules = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if p.is_dir()}
    assert set(exported) & submodules == set()
    for name in exported:
        assert getattr(module, name) is not None, (face, name)


def test_dashboards_import_only_the_analyzer_faces_and_renderers() -> None:
    allowed = {
        "analyzer",
        "analyzer.store",
        "analyzer.report",
        "analyzer.render",
        "analyzer.config",
        "analyzer.compare",
    }
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    used = {
        imported
        for m in graph.find_children("dashboards") | {"dashboards"}
        for imported in graph.find_modules_directly_imported_by(m)
        if imported.startswith("analyzer")
    }
    assert used and {u for u in used if u not in allowed and not u.startswith("analyzer.render.")} == set()
