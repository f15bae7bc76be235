"""One exception family for the whole tool; the CLI maps codes to exit codes."""

from __future__ import annotations

# Exit codes of the command-line contract.
EXIT_OK = 0
EXIT_BRANCH_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

# Error codes. Configuration and usage problems exit 2; the others fail one branch (exit 1).
USAGE_CODES = frozenset({"config", "usage", "patch-set", "locked"})


class BackportError(Exception):
    """A failure with a machine-readable ``code`` and a one-sentence ``message``.

    Codes used across the tool (the JSON output reports them as they are):
    ``config`` bad branches.yaml / patch.yaml / patch file, ``usage`` bad command line,
    ``locked`` another run holds the journal, ``git`` a git command failed,
    ``upstream-unreachable`` / ``fork-unreachable``, ``branch-missing`` target not upstream,
    ``conflict`` patch does not apply, ``fork-diverged`` someone else moved the fork branch,
    ``env-missing`` / ``env-mismatch`` / ``env-unavailable`` environment problems,
    ``test-failed``, ``test-timeout``, ``forge`` forge API error, ``auth`` bad or missing token.
    """

    def __init__(self, code: str, message: str, *, details: dict | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}

    @property
    def exit_code(self) -> int:
        return EXIT_USAGE if self.code in USAGE_CODES else EXIT_BRANCH_FAILED

    def __str__(self) -> str:
        return self.message


class ConfigError(BackportError):
    """A problem in branches.yaml, patch.yaml or a patch file; always exit 2."""

    def __init__(self, message: str, *, details: dict | None = None) -> None:
        super().__init__("config", message, details=details)
