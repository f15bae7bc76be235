"""Files of torch-npu as the tests write them: a JSON list of one member per line, and a Python
change with the test that proves it ran."""

from __future__ import annotations

# Files torch-npu writes as JSON lists of one member per line.
FILE = "test/unsupported_test_cases/.pytorch-disabled-tests.json"


def doc(*members: str) -> bytes:
    """A file as torch-npu writes it: one member per line, commas but on the last."""
    lines = [f'  "{m}": ["", [""]]' for m in members]
    body = ",\n".join(lines)
    return ("{\n" + body + "\n}\n").encode()


# A torch_npu Python change and the test that proves it ran: the pure-Python `_compat/version.py`
# of the installed torch_npu 2.13.0, whose `_parse` a series changes to keep the patch level.
COMPAT = "torch_npu/_compat/version.py"
# The test a series adds with its change to _parse; it passes only on the patched module.
COMPAT_TEST = '''import importlib.util
import sys
import types
import unittest

# torch_npu's own __init__ needs CANN; its pure-Python submodules come from its folder.
found = importlib.util.find_spec("torch_npu")
package = types.ModuleType("torch_npu")
package.__path__ = list(found.submodule_search_locations)
sys.modules["torch_npu"] = package

from torch_npu._compat import version


class CompatVersion(unittest.TestCase):
    def test_parse_keeps_the_patch_level(self):
        self.assertEqual(version._parse("2.13.1+cpu"), (2, 13, 1))


if __name__ == "__main__":
    unittest.main()
'''
