"""Rules of the git engine that need no repository: the cache folder's name per URL, sparse
patterns anchored and escaped, and which repeated definitions count as redefinitions."""

from __future__ import annotations

import ast

import pytest

from backport.errors import BackportError
from backport.git.cache import cache_dir_name
from backport.git.python_tests import redefinitions
from backport.git.worktree import sparse_pattern


def test_sparse_pattern_is_anchored_and_escaped() -> None:
    assert sparse_pattern("setup.py") == "/setup.py"
    assert sparse_pattern("/test/a[1]*.py") == "/test/a\\[1]\\*.py"
    with pytest.raises(BackportError):
        sparse_pattern("../etc/passwd")


def test_cache_dir_name_is_per_url() -> None:
    a = cache_dir_name("https://gitcode.com/Ascend/pytorch.git")
    b = cache_dir_name("https://gitcode.com/Ascend/pytorch")
    assert a.startswith("gitcode.com-Ascend-pytorch-") and a != b
    assert cache_dir_name("https://u:p@gitcode.com/Ascend/pytorch.git") == a


def test_property_setters_and_overloads_are_not_redefinitions() -> None:
    tree = ast.parse('''
class C:
    @property
    def x(self):
        return 1

    @x.setter
    def x(self, value):
        pass

def f():
    pass

def f():
    pass
''')
    assert [(r.scope, r.name, r.line, r.again) for r in redefinitions(tree)] == [("", "f", 11, 14)]
