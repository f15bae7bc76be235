"""One JSON form for every record (the journal, the PR record line, ``status --json``).

`encode` writes a frozen dataclass field by field (an enum by its value, a tuple as a list);
`decode` reads it back by the dataclass's type hints. Reading is lenient where a record written
before a field existed needs it (a missing key or ``null`` reads as the field's default; a key
no field has is ignored) and strict about everything else: a value of the wrong shape raises
`CodecError`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


class CodecError(ValueError):
    """A JSON value does not have the shape of the record it should be."""


def encode(value: Any, *, compact: bool = False, keep: Any = None) -> Any:
    """``value`` as JSON values. ``compact`` leaves out every field at its default; ``keep``,
    the JSON a record was read from, gives back its keys no field has (a later version's)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = {f.name for f in dataclasses.fields(value)}
        kept = keep if isinstance(keep, dict) else {}
        data = {key: item for key, item in kept.items() if key not in names}
        data.update((f.name, encode(getattr(value, f.name), compact=compact, keep=kept.get(f.name)))
                    for f in dataclasses.fields(value)
                    if not (compact and getattr(value, f.name) == _default(f)))
        return data
    if isinstance(value, enum.Enum):
        return encode(value.value)
    if isinstance(value, tuple | list):
        return [encode(item, compact=compact) for item in value]
    if isinstance(value, dict):
        return {str(key): encode(item, compact=compact) for key, item in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot encode {type(value).__name__}")


def decode(cls: type[T], data: Any) -> T:
    """The ``cls`` record of JSON ``data``; :class:`CodecError` when the shape is wrong."""
    return typing.cast(T, _decode(cls, data, cls.__name__))


_hints = functools.cache(typing.get_type_hints)


def _default(f: dataclasses.Field) -> Any:
    """The field's default value; ``dataclasses.MISSING`` when it has none."""
    return f.default if f.default_factory is dataclasses.MISSING else f.default_factory()


def _record(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise CodecError(f"{where}: expected an object, found {type(data).__name__}")
    hints = _hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        value = data.get(f.name)
        if value is None and _default(f) is not dataclasses.MISSING:
            continue  # written before the field existed
        if f.name not in data:
            raise CodecError(f"{where}: no {f.name}")
        values[f.name] = _decode(hints[f.name], value, f"{where}.{f.name}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise CodecError(f"{where}: {exc}") from exc


def _decode(tp: Any, data: Any, where: str) -> Any:  # noqa: C901 - one branch per kind of type
    if tp is Any:
        return data
    if tp is type(None):
        if data is not None:
            raise CodecError(f"{where}: expected null")
        return None
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        errors = []
        for arg in typing.get_args(tp):
            try:
                return _decode(arg, data, where)
            except CodecError as exc:
                errors.append(str(exc))
        raise CodecError("; ".join(errors))
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (tuple, list):
        if not isinstance(data, list | tuple):
            raise CodecError(f"{where}: expected a list, found {type(data).__name__}")
        if origin is list or args[1:] == (Ellipsis,):  # list[X] or tuple[X, ...]
            args = (args[0],) * len(data)
        if len(args) != len(data):
            raise CodecError(f"{where}: expected {len(args)} items, found {len(data)}")
        items = (_decode(arg, item, f"{where}[{i}]")
                 for i, (arg, item) in enumerate(zip(args, data, strict=True)))
        return list(items) if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(data, dict):
            raise CodecError(f"{where}: expected an object, found {type(data).__name__}")
        return {_decode(args[0], key, where): _decode(args[1], item, f"{where}.{key}")
                for key, item in data.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _record(tp, data, where)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError as exc:
            raise CodecError(f"{where}: {exc}") from exc
    if tp not in (bool, int, float, str):
        raise CodecError(f"{where}: cannot decode type {tp!r}")
    if isinstance(data, bool) and tp is not bool:  # JSON's true is no number
        raise CodecError(f"{where}: expected {tp.__name__}, found bool")
    if tp is float and isinstance(data, int | float):
        return float(data)
    if not isinstance(data, tp):
        raise CodecError(f"{where}: expected {tp.__name__}, found {type(data).__name__}")
    return data
