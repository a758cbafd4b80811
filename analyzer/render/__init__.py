"""Report renderers: ``RENDERERS[name].render(report) -> str``; format from the output path."""

from __future__ import annotations

from pathlib import Path

from analyzer.errors import UsageError
from analyzer.render.base import Renderer
from analyzer.render.html import HtmlRenderer
from analyzer.render.jsonreport import JsonRenderer
from analyzer.render.markdown import MarkdownRenderer
from analyzer.render.text import TextRenderer

RENDERERS: dict[str, Renderer] = {
    "text": TextRenderer(),
    "json": JsonRenderer(),
    "md": MarkdownRenderer(),
    "html": HtmlRenderer(),
}
_EXTENSIONS = {".txt": "text", ".json": "json", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}


def renderer_for(fmt: str | None, output: str | None) -> Renderer:
    """``--format`` wins; else the ``-o`` extension; else text."""
    if fmt:
        return RENDERERS[fmt]
    if output and output != "-":
        ext = Path(output).suffix.lower()
        if ext not in _EXTENSIONS:
            raise UsageError(
                f"cannot tell the report format from {output!r}; use an extension "
                f"({', '.join(sorted(_EXTENSIONS))}) or --format {'|'.join(RENDERERS)}"
            )
        return RENDERERS[_EXTENSIONS[ext]]
    return RENDERERS["text"]


__all__ = ["RENDERERS", "Renderer", "renderer_for"]
