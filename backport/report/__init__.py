"""What a run writes for people: the PR body (`body.py`, templates/pr_body.md.j2), its generated
regions and record line (`regions.py`), the wording of its facts (`wording.py`), the one rule for
text from outside (`untrusted.py`), the run report and the source PR's summary comment
(`summary.py`), the CI job matrix and pipelines (`ci_matrix.py`), progress on stderr
(`progress.py`)."""
