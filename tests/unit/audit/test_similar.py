"""The similar-title rule on titles and files made here: a fix opened again under a title
written again is landed; another fix with a like title but no file in common is not."""

from __future__ import annotations

from backport.audit.model import Cell, Change
from backport.audit.similar import TitleIndex, decide
from backport.titles import title_key

BRANCHES = ("v2.7.1", "master")


def key(title: str) -> str:
    return title_key(title, BRANCHES)


def index() -> TitleIndex:
    return TitleIndex([
        ("a" * 40, key("【fix】batchnorm_check_fix"), ["torch_npu/contrib/bn.py"]),
        ("b" * 40, key("apply _device_supports_tma"), ["torch_npu/_inductor/utils.py"]),
        ("c" * 40, key("add test for op_alpha kernels"), ["test/test_alpha.py"]),
    ])


def test_a_title_written_again_with_a_file_in_common() -> None:
    found = index()
    assert found.alike(key("【fix】batcnnorm_check_fix"), ["torch_npu/contrib/bn.py"],
                       "x" * 40) == "a" * 40
    assert found.alike(key("apply the _device_supports_tma."),
                       ["torch_npu/_inductor/utils.py", "t.py"], "x" * 40) == "b" * 40
    # alike, but no file in common; or not alike enough; or too short to tell
    assert found.alike(key("【fix】batcnnorm_check_fix"), ["other.py"], "x" * 40) == ""
    assert found.alike(key("add test for op_beta kernels"), ["test/test_alpha.py"],
                       "x" * 40) == ""
    assert TitleIndex([("d" * 40, "fix", ["a.py"])]).alike("fix", ["a.py"], "x" * 40) == ""


def test_a_general_title_or_only_a_test_in_common_is_not_enough() -> None:
    docs = TitleIndex([("d" * 40, key("[docs]modify document"), ["README.md"])])
    assert docs.alike(key("[docs]modify documents"), ["README.md"], "x" * 40) == ""
    # the target's commit of that title is only the follow-up test; the fix's code is not there
    follow_up = TitleIndex([("e" * 40, key("[fix]meta_check-on_rebuild-npu_tensor"),
                             ["test/test_rng.py"])])
    assert follow_up.alike(key("[fix]meta_check_on_rebuild-npu_tensor"),
                           ["torch_npu/utils/storage.py", "test/test_rng.py"], "x" * 40) == ""
    assert follow_up.alike(key("[fix]meta_check_on_rebuild-npu_tensor"),
                           ["test/test_rng.py"], "x" * 40) == "e" * 40


def test_only_missing_and_not_needed_cells_are_asked() -> None:
    c = Change("master", "x" * 40, 5, "【fix】batcnnorm_check_fix", "2026-01-01", "a")
    c.on["v2.7.1"] = Cell("missing", applies=False)
    decide({"v2.7.1": index()}, {c.commit: key(c.title)}, {c.commit: ["torch_npu/contrib/bn.py"]},
           [c])
    assert c.on["v2.7.1"].to_json() == {"state": "landed", "commit": "a" * 40,
                                        "why": "similar title, a file in common"}
    ignored = Change("master", "y" * 40, 6, "【fix】batcnnorm_check_fix", "2026-01-01", "a")
    ignored.on["v2.7.1"] = Cell("ignored")
    decide({"v2.7.1": index()}, {ignored.commit: key(ignored.title)},
           {ignored.commit: ["torch_npu/contrib/bn.py"]}, [ignored])
    assert ignored.on["v2.7.1"].state == "ignored"
