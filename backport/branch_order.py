"""Release order of target branches: which is newer, which is nearest.

``master`` / ``main`` are newest; ``vX.Y.Z`` (and ``X.Y.Z-suffix``) branches follow by version;
names without a version keep their configured order, after the versioned ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_TRUNKS = ("master", "main")
_VERSION = re.compile(r"v?(\d+(?:\.\d+)*)")


def _key(target: str) -> tuple[int, tuple[int, ...]]:
    if target in _TRUNKS:
        return (2, ())
    if match := _VERSION.match(target):
        return (1, tuple(int(part) for part in match.group(1).split(".")))
    return (0, ())


def newest_first(targets: Iterable[str]) -> list[str]:
    """``targets`` from the newest release to the oldest (master → v2.12.0 → v2.7.1)."""
    return sorted(targets, key=_key, reverse=True)


def newer(target: str, than: str) -> bool:
    """True when ``target`` is a newer release than ``than`` (unversioned names are neither)."""
    return _key(target) > _key(than)


def nearest_first(target: str, targets: Sequence[str]) -> list[str]:
    """The other ``targets`` by distance from ``target`` in release order, newer on a tie."""
    order = newest_first(dict.fromkeys([*targets, target]))
    here = order.index(target)
    others = [t for t in order if t != target]
    return sorted(others, key=lambda t: abs(order.index(t) - here))
