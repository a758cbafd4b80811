"""``horovod.autotune_result`` (info): the best parameters Horovod's autotuner found.

The log's threshold is in MB while ``HOROVOD_FUSION_THRESHOLD`` takes bytes (copying the
log value gives a threshold of a few bytes), so the suggestion converts it. Only a finished tuning
yields settings to fix; an unfinished one is reported as the best so far, with advice to let it
finish. The response cache is never turned off on the tuner's word.
"""

from __future__ import annotations

from analyzer.detectors._logs import src
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.nccl.model import NcclModel
from analyzer.report.nccl_section import autotune_result

CODE = "horovod.autotune_result"


class AutotuneResult(LogDetector):
    name = "autotune_result"
    code = CODE
    requires = ("autotune",)
    why_required = "no Horovod autotune log (HOROVOD_AUTOTUNE_LOG) was ingested"

    def check(self, model: NcclModel) -> list[Finding]:
        best = autotune_result(model)
        if best is None:
            return []
        threshold = round(best["fusion_threshold_mb"] * 1024 * 1024)
        env = {"HOROVOD_FUSION_THRESHOLD": str(threshold), "HOROVOD_CYCLE_TIME": f"{best['cycle_time_ms']:g}"}
        if best["hierarchical_allreduce"]:
            env["HOROVOD_HIERARCHICAL_ALLREDUCE"] = "1"
        if best["hierarchical_allgather"]:
            env["HOROVOD_HIERARCHICAL_ALLGATHER"] = "1"
        # the response cache is never turned off on the tuner's word: off is one of its trials, and
        # production runs need the cache for fast negotiation
        if best["finished"]:
            how = "tuning finished: the last row is the best set"
            advice = Suggestion(
                action="Set the tuned values explicitly (the threshold in bytes, not MB) and turn autotuning off.",
                env=env,
                rationale="HOROVOD_FUSION_THRESHOLD is parsed as bytes; the log column is MiB.",
            )
        else:
            how = "tuning did not finish (no final best row): the highest-scoring row so far"
            advice = Suggestion(
                action=f"Let the tuning finish before fixing values: {best['rows']} sample(s) are too few to choose "
                "production settings (it stops after its warm-up and HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES "
                "samples, each HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE steps); run longer with HOROVOD_AUTOTUNE=1.",
            )
        return [
            Finding(
                code=CODE,
                severity=Severity.INFO,
                title=(
                    f"Autotune {'best' if best['finished'] else 'unfinished, best so far'}: fusion "
                    f"{best['fusion_threshold_mb']:g} MB, cycle {best['cycle_time_ms']:g} ms"
                ),
                summary=f"{best['rows']} autotune sample(s); {how} scores {best['score']:g} (bytes/us, higher is better).",
                detector=self.name,
                evidence=(
                    Evidence(
                        summary=f"row at line {best['line']} ({best['layout']}+ layout)",
                        sources=(src(best["file"], best["line"]),),
                        metrics={
                            "score": best["score"],
                            "fusion_threshold_mb": best["fusion_threshold_mb"],
                            "cycle_time_ms": best["cycle_time_ms"],
                        },
                    ),
                ),
                suggestions=(advice,),
            )
        ]
