"""`check`'s CI step summary shows file names and messages from the patches as inert text."""

from __future__ import annotations

from backport.pipeline.check import Finding, summary_markdown
from tests.helpers.hostile_text import HOSTILE, read


def test_hostile_details_stay_in_their_cells() -> None:
    findings = [Finding(f"pr-1 on {word}", "applies", False, f"conflict in {word}")
                for word in HOSTILE]
    text = summary_markdown("backport check", findings)
    seen = read(text)
    assert seen.rows == [4] * (len(HOSTILE) + 1)
    assert seen.html == [] and seen.links == [] and seen.live_text == []
    assert seen.headings == ["backport check"]
