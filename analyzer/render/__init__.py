"""Report renderers: ``RENDERERS[name].render(report) -> str``; format from the output path.

A renderer's module loads when its format is first asked for: start-up, and every command that
renders nothing (``ingest``, ``--help``), skip them all (75 ms of imports, measured).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.errors import UsageError

if TYPE_CHECKING:
    from analyzer.render.base import Renderer

#: format -> (module, class) of its renderer
_CLASSES = {
    "text": ("analyzer.render.text", "TextRenderer"),
    "json": ("analyzer.render.jsonreport", "JsonRenderer"),
    "md": ("analyzer.render.markdown", "MarkdownRenderer"),
    "html": ("analyzer.render.html", "HtmlRenderer"),
    "junit": ("analyzer.render.junit", "JunitRenderer"),
}


class _Renderers(Mapping[str, "Renderer"]):
    """Every format's renderer, each made on first use."""

    def __init__(self) -> None:
        self._made: dict[str, Renderer] = {}

    def __getitem__(self, name: str) -> Renderer:
        made = self._made.get(name)
        if made is None:
            module, cls = _CLASSES[name]
            made = self._made[name] = getattr(importlib.import_module(module), cls)()
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(_CLASSES)

    def __len__(self) -> int:
        return len(_CLASSES)


RENDERERS: Mapping[str, Renderer] = _Renderers()
_EXTENSIONS = {
    ".txt": "text",
    ".json": "json",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".xml": "junit",
}


def renderer_for(fmt: str | None, output: str | None, fail_on: str | None = None) -> Renderer:
    """``--format`` wins; else the ``-o`` extension; else text. JUnit fails the cases of findings at or
    above ``fail_on`` (default: warning)."""
    chosen = _chosen(fmt, output)
    if chosen == "junit" and fail_on:
        from analyzer.render.junit import JunitRenderer

        return JunitRenderer(fail_on)
    return RENDERERS[chosen]


def _chosen(fmt: str | None, output: str | None) -> str:
    return format_for(fmt, output, _EXTENSIONS)


def format_for(fmt: str | None, output: str | None, extensions: dict[str, str]) -> str:
    """``--format`` wins; else the ``-o`` extension (one of ``extensions``); else text."""
    if fmt:
        return fmt
    if output and output != "-":
        ext = Path(output).suffix.lower()
        if ext not in extensions:
            raise UsageError(
                f"cannot tell the format from {output!r}; use an extension "
                f"({', '.join(sorted(extensions))}) or --format {'|'.join(dict.fromkeys(extensions.values()))}"
            )
        return extensions[ext]
    return "text"


def __getattr__(name: str) -> object:
    if name == "Renderer":  # the base class, loaded on demand like the renderers
        from analyzer.render.base import Renderer

        return Renderer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["RENDERERS", "Renderer", "renderer_for", "format_for"]
