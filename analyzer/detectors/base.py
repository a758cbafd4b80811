"""The detector contract.

A detector is a plain object with a ``name``, the ``requires`` tuple of store tables it
reads (perfetto's data checks), and ``detect(ctx) -> list[Finding]``. It computes; it
never prints, plots or logs. :func:`analyzer.report.analyze.analyze` skips a detector whose tables
are absent and records why, instead of running it on empty data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from analyzer.findings import Finding
from analyzer.nccl.model import NcclModel, build_nccl_model
from analyzer.store.run_store import RunStore
from analyzer.timeline.model import TimelineModel
from analyzer.timeline.load import DEFAULT_MEMORY_BUDGET, analysed_model


@dataclass
class Context:
    """What detectors read: the store (tables are cached there) and the settings
    (``memory_budget``: bytes a timeline's model may take, :mod:`analyzer.timeline.load`)."""

    store: RunStore
    config: dict[str, Any] = field(default_factory=dict)
    _timelines: list[TimelineModel] | None = field(default=None, repr=False)
    _nccl: NcclModel | None = field(default=None, repr=False)

    def table(self, name: str) -> pa.Table:
        return self.store.table(name)

    def input_entry(self, input_id: str) -> dict[str, Any]:
        """The manifest entry of an input (path, sha256, timeline facts, ...)."""
        return next(e for e in self.store.inputs if e["id"] == input_id)

    def timelines(self) -> list[TimelineModel]:
        """Every timeline input, analysed once (:func:`analyzer.timeline.load.analysed_model`)."""
        if self._timelines is None:
            budget = int(self.config.get("memory_budget", DEFAULT_MEMORY_BUDGET))
            self._timelines = [analysed_model(self.store, e, budget) for e in self.store.inputs
                               if e["kind"] == "horovod_timeline"]
        return self._timelines

    def nccl(self) -> NcclModel:
        """Every NCCL / job log of the store (:func:`analyzer.nccl.model.build_nccl_model`), read once."""
        if self._nccl is None:
            self._nccl = build_nccl_model(self.store)
        return self._nccl


class Detector(Protocol):
    name: str
    requires: tuple[str, ...]
    why_required: str

    def detect(self, ctx: Context) -> list[Finding]: ...


class TimelineDetector:
    """Base of the detectors that judge one timeline at a time: subclasses set ``name`` and
    implement :meth:`check`."""

    name: str
    requires: tuple[str, ...] = ("spans",)
    why_required = "no Horovod timeline was ingested"

    def detect(self, ctx: Context) -> list[Finding]:
        return [f for m in ctx.timelines() if (f := self.check(m)) is not None]

    def check(self, model: TimelineModel) -> Finding | None:
        raise NotImplementedError


class LogDetector:
    """Base of the detectors that judge the NCCL / job logs: subclasses set ``name`` and
    ``requires`` and implement :meth:`check`."""

    name: str
    requires: tuple[str, ...] = ("nccl_processes",)
    why_required = "no NCCL_DEBUG=INFO log was ingested"

    def detect(self, ctx: Context) -> list[Finding]:
        return self.check(ctx.nccl())

    def check(self, model: NcclModel) -> list[Finding]:
        raise NotImplementedError
