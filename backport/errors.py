"""One exception family for the whole tool, its error codes and the one table of exit codes."""

from __future__ import annotations

from enum import StrEnum

# Exit codes of the command-line contract.
EXIT_OK = 0
EXIT_BRANCH_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class ErrorCode(StrEnum):
    """Why something failed; the JSON output and the journal report these strings as they are."""

    CONFIG = "config"  # bad branches.yaml / patch.yaml / patch file / journal file
    USAGE = "usage"  # bad command line or argument
    LOCKED = "locked"  # another run holds the journal
    JOURNAL = "journal"  # the run journal cannot be written
    GIT = "git"  # a git command failed
    UPSTREAM_UNREACHABLE = "upstream-unreachable"
    FORK_UNREACHABLE = "fork-unreachable"
    BRANCH_MISSING = "branch-missing"  # the target branch is not upstream
    CONFLICT = "conflict"  # the patch does not apply
    FORK_DIVERGED = "fork-diverged"  # someone else moved the fork branch
    ENV_MISSING = "env-missing"  # no interpreter, or it cannot be built
    ENV_MISMATCH = "env-mismatch"  # the environment does not match its pins
    ENV_UNAVAILABLE = "env-unavailable"  # device: npu without a visible NPU
    TEST_FAILED = "test-failed"  # a test could not be run
    FORGE = "forge"  # the forge's API answered with an error
    SOURCE_UNPROVEN = "source-unproven"  # no commit on its base is proven to be a merged PR's
    AUTH = "auth"  # the forge refused the token (none given: a config error)
    INTERNAL = "internal"  # a bug: anything that is not a BackportError


# Configuration and usage problems exit 2; any other code fails the branch it happened on (the
# run goes on with the others and exits 1 at the end) or, outside a run, exits 1.
EXIT_CODES = {code: EXIT_USAGE if code in (ErrorCode.CONFIG, ErrorCode.USAGE, ErrorCode.LOCKED)
              else EXIT_BRANCH_FAILED for code in ErrorCode}


class BackportError(Exception):
    """A failure with a machine-readable ``code`` and a one-sentence ``message``."""

    def __init__(self, code: ErrorCode | str, message: str, *, details: dict | None = None) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.details = details or {}

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.code]


class ConfigError(BackportError):
    """A problem in branches.yaml, patch.yaml or a patch file; always exit 2."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.CONFIG, message)


class ForkDiverged(BackportError):
    """Someone else moved the fork branch: it is at ``remote`` (None: absent), not ``expected``."""

    def __init__(self, message: str, *, remote: str | None, expected: str | None) -> None:
        super().__init__(ErrorCode.FORK_DIVERGED, message)
        self.remote = remote
        self.expected = expected
