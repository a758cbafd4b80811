"""``nccl.version_mismatch``: processes of one job run different NCCL builds; and
``nccl.release_wording``: processes print the wording of different releases.

Signal: two different printed versions (``nccl.version_mismatch``). NCCL before 2.23 does not
check this itself; mixed builds show up as garbage peer addresses, rings that do not loop back
or hangs. Version-specific wording (``NET/Plugin``, ``Bootstrap`` lines;
``docs/formats/nccl-log.md`` §6) whose release ranges do not overlap between two processes is
weaker evidence (a net plugin or a setting can change a line too): it is an informational
``nccl.release_wording`` finding that says so and gives no advice.
"""

from __future__ import annotations

from analyzer.detectors._logs import hosts, listed, src, who
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.nccl.model import NcclModel
from parsers.nccl.wording import parse_version

CODE = "nccl.version_mismatch"
WORDING_CODE = "nccl.release_wording"


def _key(text: str) -> tuple[int, int, int]:
    if text.endswith(".x"):
        return (int(text.split(".")[0]), 99, 99)
    return parse_version(text)


class VersionMismatch(LogDetector):
    name = "version_mismatch"
    code = CODE

    def check(self, model: NcclModel) -> list[Finding]:
        p = model.processes
        if p.empty:
            return []
        evidence = []
        versions = p[p["version"].notna()]
        distinct = sorted(set(versions["version"]))
        if len(distinct) > 1:
            for v in distinct:
                rows = versions[versions["version"] == v]
                evidence.append(
                    Evidence(
                        summary=f"NCCL {v} on {listed([who(r.host, r.pid) for r in rows.itertuples()])}",
                        sources=(src(rows.iloc[0]["file"], rows.iloc[0]["first_line"]),),
                    )
                )
        if not evidence:
            return []
        return [
            Finding(
                code=CODE,
                severity=Severity.CRITICAL,
                title="Processes run different NCCL versions",
                summary=(
                    f"The job mixes NCCL builds ({', '.join(distinct)}). Ranks exchange internal structures whose "
                    "layout changes between releases: mixed builds fail with garbage peer addresses, inconsistent "
                    "rings or hangs."
                ),
                detector=self.name,
                evidence=tuple(evidence),
                suggestions=(
                    Suggestion(
                        action="Install the same NCCL on every node (one container image; pin nvidia-nccl-cu12 in pip) and "
                        "make sure LD_LIBRARY_PATH does not pick a system libnccl on some hosts.",
                        rationale="Check with NCCL_DEBUG=VERSION: every process then prints its version.",
                    ),
                ),
                hosts=hosts(p),
            )
        ]


class ReleaseWording(LogDetector):
    name = "release_wording"
    code = WORDING_CODE

    def check(self, model: NcclModel) -> list[Finding]:
        p = model.processes
        if p.empty or p["version"].dropna().nunique() > 1:  # printed versions: nccl.version_mismatch says it
            return []
        worded = p[p["wording_min"].notna()]
        ranges = {(r.wording_min, r.wording_max): r for r in worded.itertuples()}
        disjoint = [
            (a, b) for a in ranges for b in ranges if a < b and (_key(a[1]) < _key(b[0]) or _key(b[1]) < _key(a[0]))
        ]
        if not disjoint:
            return []
        a, b = disjoint[0]
        evidence = tuple(
            Evidence(
                summary=f"{who(ranges[rng].host, ranges[rng].pid)} prints the wording of NCCL {rng[0]} - {rng[1]}",
                sources=(src(ranges[rng].file, ranges[rng].first_line),),
            )
            for rng in (a, b)
        )
        return [
            Finding(
                code=WORDING_CODE,
                severity=Severity.INFO,
                title="Processes print the wording of different NCCL releases (low confidence)",
                summary=(
                    "Messages whose wording changed between releases read differently on these processes: they may "
                    "run different NCCL builds, or one build with another net plugin or settings. No version line "
                    "tells them apart, so this is not a verdict."
                ),
                detector=self.name,
                evidence=evidence,
                hosts=hosts(p),
            )
        ]
