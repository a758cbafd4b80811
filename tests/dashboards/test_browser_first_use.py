"""A new user's first upload in a real browser: loose files, one of them not an input (a job's stdout
with horovodrun's ``[0]<stdout>:`` prefixes, which starts with ``[`` like JSON), make the run as the
same files in an archive or a folder do, with the non-input listed; the Steps page says what to tune."""

from __future__ import annotations

from typing import Any

import pytest

from tests.dashboards.conftest import TIMEOUT
from tests.dashboards.helpers import REAL_STRAGGLER
from tests.dashboards.test_browser import _shot, _tab, _wait_status

pytestmark = pytest.mark.slow

STDOUT = b"[0]<stdout>:CONFIG model=mlp steps=30\n[1]<stdout>:CONFIG model=mlp steps=30\n[0]<stdout>:step 1 0.12 s\n"


def test_loose_files_with_a_non_input_make_the_run_and_list_it(page: Any) -> None:
    with page.expect_file_chooser() as chooser:
        page.click("#upload-choose")
    chooser.value.set_files(
        files=[
            {"name": "timeline.json", "mimeType": "application/json", "buffer": REAL_STRAGGLER.read_bytes()},
            {"name": "stdout.txt", "mimeType": "text/plain", "buffer": STDOUT},
            {"name": "NOTES.md", "mimeType": "text/markdown", "buffer": b"# what this run was\n"},
        ]
    )
    status = _wait_status(page, "Done")
    assert "Failed" not in status
    page.wait_for_selector('.finding[data-code="timeline.straggler"]')
    listed = page.inner_text("#skipped-files")
    assert "stdout.txt" in listed and "[N]<stdout>:" in listed and "NOTES.md" in listed
    assert "input-0" not in listed and "uploaded files" not in page.inner_text("#verdict")  # the user's names
    assert float(page.get_attribute("#progress", "value") or 0) == 1.0  # the bar ends full
    _tab(page, "Steps")
    page.wait_for_selector("#tuning", timeout=TIMEOUT)
    assert "wins up to" in page.inner_text("#tuning")
    _shot(page, "loose-files")
