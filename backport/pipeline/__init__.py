"""The per-branch state machine: the only place that knows the order of the steps.

Start at `run.py` (`apply`'s run, phase by phase, and `STEPS`, one branch's steps top to
bottom). Each step lives in the module of its name: `proposed.py` (proposed, same_fix),
`steps.py` (apply, test, push; what applying gives is `decide.py`'s), `pr_step.py` (pr, the set
as the forge shows it, the refresh of the set's PRs, the source PR's summary). `journal.py`
holds the records and locks; `session.py` what a run shares (how far it goes, who may write to
the upstream, each patch set's run and its branch jobs); `check.py`, `resume.py` and
`from_pr.py` serve their commands.
"""
