"""Files torch-npu writes as JSON lists of one member per line."""

from __future__ import annotations

FILE = "test/unsupported_test_cases/.pytorch-disabled-tests.json"


def doc(*members: str) -> bytes:
    """A file as torch-npu writes it: one member per line, commas but on the last."""
    lines = [f'  "{m}": ["", [""]]' for m in members]
    body = ",\n".join(lines)
    return ("{\n" + body + "\n}\n").encode()
