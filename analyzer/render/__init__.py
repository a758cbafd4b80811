"""Report renderers: ``RENDERERS[name].render(report) -> str``; format from the output path."""

from __future__ import annotations

from pathlib import Path

from analyzer.errors import UsageError
from analyzer.render.base import Renderer
from analyzer.render.html import HtmlRenderer
from analyzer.render.jsonreport import JsonRenderer
from analyzer.render.junit import JunitRenderer
from analyzer.render.markdown import MarkdownRenderer
from analyzer.render.text import TextRenderer

RENDERERS: dict[str, Renderer] = {
    "text": TextRenderer(),
    "json": JsonRenderer(),
    "md": MarkdownRenderer(),
    "html": HtmlRenderer(),
    "junit": JunitRenderer(),
}
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
    return JunitRenderer(fail_on) if chosen == "junit" and fail_on else RENDERERS[chosen]


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


__all__ = ["RENDERERS", "Renderer", "renderer_for", "format_for"]
