"""The ranks' lateness model: per step and rank, how late each rank was ready
(:class:`StepLateness`, fed by every evidence source of rank timing), and which ranks stand out
from the host's noise (:func:`judge`)."""

from __future__ import annotations

from analyzer.lateness.judging import Judgement, RankVerdict, judge
from analyzer.lateness.model import StepLateness, from_readings
from analyzer.lateness.when import Pattern

__all__ = ["Judgement", "Pattern", "RankVerdict", "StepLateness", "from_readings", "judge"]
