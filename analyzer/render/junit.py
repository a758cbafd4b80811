"""JUnit XML for CI systems (Jenkins, GitLab, GitHub Actions reporters, Azure DevOps): one test case
per detector; a detector with a finding at or above the threshold (``--fail-on``, default warning)
fails with the finding as its message, a detector whose inputs are absent is skipped, and findings
below the threshold are the passing case's output. The verdict rides along as properties.
"""

from __future__ import annotations

import socket
import time
from xml.sax.saxutils import escape as _escape
from xml.sax.saxutils import quoteattr

from analyzer.findings import Finding, Severity
from analyzer.render.base import env_lines, impact_text, one_line
from analyzer.report.model import AnalysisReport


def _xml(text: object) -> str:
    """Text as XML character data: escaped, and without the control characters XML 1.0 forbids."""
    s = "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else f"\\x{ord(c):02x}" for c in str(text))
    return _escape(s)


def _attr(text: object) -> str:
    """Text as a quoted XML attribute (one line, control characters escaped by one_line)."""
    return quoteattr(one_line(str(text)))


def _detail(f: Finding) -> str:
    lines = [f"[{f.severity.label.upper()}] {f.code}: {f.title}", f.summary, f"impact: {impact_text(f)}"]
    lines += [f"evidence: {e.summary}" for e in f.evidence]
    lines += [f"try: {s.action}" for s in f.suggestions]
    return "\n".join([*lines, *env_lines(f)])


class JunitRenderer:
    name = "junit"
    extension = ".xml"

    def __init__(self, fail_on: str = "warning") -> None:
        self.threshold = Severity.parse(fail_on)

    def render(self, report: AnalysisReport) -> str:
        from analyzer.detectors import ALL_DETECTORS

        v = report.verdict()
        skipped = {s.detector: s.reason for s in report.skipped}
        by_detector: dict[str, list[Finding]] = {}
        for f in report.findings:
            by_detector.setdefault(f.detector, []).append(f)
        known = {d.name: d.code for d in ALL_DETECTORS}
        others = {f.detector: f.code for f in report.findings if f.detector not in known}  # none is ever lost
        cases, failures = [], 0
        for name, code in (known | others).items():
            head = f'<testcase classname={_attr("hvd-analyze." + code.split(".")[0])} name={_attr(code)} time="0">'
            found = by_detector.get(name, [])
            failing = [f for f in found if f.severity >= self.threshold]
            if name in skipped:
                body = f"<skipped message={_attr(skipped[name])}/>"
            elif failing:
                failures += 1
                worst = failing[0]
                text = "\n\n".join(_detail(f) for f in failing)
                body = (
                    f"<failure message={_attr(worst.title)} type={_attr(worst.severity.label)}>{_xml(text)}</failure>"
                )
            else:
                body = ""
            below = [f for f in found if f not in failing]
            if below:
                body += f"<system-out>{_xml(chr(10).join(_detail(f) for f in below))}</system-out>"
            cases.append(f"    {head}{body}</testcase>")
        n, n_skipped = len(cases), sum(name in skipped for name in known | others)
        counts = f'tests="{n}" failures="{failures}" errors="0" skipped="{n_skipped}" time="0"'
        props = {
            "verdict": v["status"],
            "headline": v["headline"],
            "median_step_ms": "" if v["median_step_ms"] is None else f"{v['median_step_ms']}",
            "fail_on": self.threshold.label,
            "tool_version": report.tool_version,
        }
        return "\n".join(
            [
                '<?xml version="1.0" encoding="UTF-8"?>',
                f'<testsuites name="hvd-analyze" {counts}>',
                f'  <testsuite name="hvd-analyze" {counts} timestamp={_attr(time.strftime("%Y-%m-%dT%H:%M:%S"))} '
                f"hostname={_attr(socket.gethostname())}>",
                "    <properties>",
                *[f"      <property name={_attr(k)} value={_attr(val)}/>" for k, val in props.items()],
                "    </properties>",
                *cases,
                "  </testsuite>",
                "</testsuites>",
                "",
            ]
        )
