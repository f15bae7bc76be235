"""The per-branch state machine: the only place that knows the order of the steps."""
