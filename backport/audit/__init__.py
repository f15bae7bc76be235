"""`backport audit`: every change merged on a mapped branch, and its state on every other one."""
