"""The per-branch state machine: the only place that knows the order of the steps.

Start at `run.py` (`apply`'s run, phase by phase), then `flow.py` (one branch's steps, top to
bottom, each naming the module of its function); `set_run.py` is what one patch set's run is.
"""
