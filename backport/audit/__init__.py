"""`backport audit`: every first-parent change of each mapped branch since a date and its state
on every other one (landed, proposed, missing and whether it applies, not-needed, ignored),
decided by the rules apply and check use (`rules.py`) over what the history holds (`history.py`,
`facts.py`, `blobs.py`), plus the audit's own (`similar.py`, `content.py`); one row per fix
(`model.py`, the one JSON form, docs/audit.md); the run (`run.py`); the page and the terminal
summary (`page.py`)."""
