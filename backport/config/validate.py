"""Typed access to parsed YAML (`Doc`, `Val`) whose errors are one sentence naming file, line
and key path (did-you-mean for unknown keys), and the rules for repository paths and URLs."""

from __future__ import annotations

import contextlib
import difflib
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import unquote, urlsplit

from backport.config.yamlsafe import MAX_FILE_BYTES, LineProblem, Loc, YMap, YSeq, parse_yaml
from backport.errors import ConfigError
from backport.redact import redact

MAX_STR = 4096  # longest ordinary string value


def config_error(message: str) -> ConfigError:
    """A ``ConfigError`` whose message is redacted, on one printable line, and not huge."""
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in redact(message))
    if len(text) > 1000:
        text = text[:997] + "..."
    return ConfigError(text)


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it, else as given."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)


def read_bytes(path: Path, limit: int = -1) -> bytes:
    """The bytes of ``path``; `ConfigError` when it cannot be read or has more than ``limit``."""
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1 if limit >= 0 else -1)
    except FileNotFoundError:
        raise config_error(f"{display_path(path)} not found") from None
    except OSError as exc:
        raise config_error(f"{display_path(path)} cannot be read ({exc.strerror or exc})") from None
    if 0 <= limit < len(data):
        raise config_error(f"{display_path(path)}: is larger than {limit >> 20} MiB")
    return data


def home_as_tilde(text: str) -> str:
    """A path as text, with the home directory written as ``~`` (never a path of this user)."""
    home = os.path.expanduser("~").rstrip("/")
    return "~" + text[len(home) :] if home and (text + "/").startswith(home + "/") else text


@dataclass(frozen=True)
class Val:
    """A value read from a YAML file with its line and key path (``raw``: scalar source)."""

    value: Any
    line: int | None
    path: str
    raw: str | None = None

    def child(self, key: str, loc: Loc | None, value: Any) -> Val:
        path = f"{self.path}.{key}" if self.path else key
        return Val(value, loc.line if loc else self.line, path, loc.raw if loc else None)


def kind(value: Any) -> str:
    """How a value's type is named in messages."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    names = {dict: "a mapping", list: "a list", date: "a date", bytes: "binary data"}
    return next((name for t, name in names.items() if isinstance(value, t)), "a string")


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def suggest(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class Doc:
    """One configuration file being validated; every error it raises names the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.display = display_path(path)

    def error(self, line: int | None, message: str, path: str = "") -> ConfigError:
        where = f"{self.display}:{line}" if line else self.display
        what = f" {path}:" if path else ""
        return config_error(f"{where}:{what} {message}")

    def fail(self, v: Val, message: str) -> NoReturn:
        raise self.error(v.line, message, v.path)

    def load(self) -> Val:
        """Read and parse the file; the root value must be a non-empty mapping."""
        data = read_bytes(self.path, MAX_FILE_BYTES)
        try:
            root = parse_yaml(data.decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise self.error(data.count(b"\n", 0, exc.start) + 1, "is not valid UTF-8") from None
        except LineProblem as exc:
            raise self.error(exc.line, exc.message) from None
        if root is None:
            raise self.error(None, "is empty")
        if not isinstance(root, YMap):
            raise self.error(1, f"must be a mapping of keys to values, not {kind(root)}")
        return Val(root, root.line, "")

    def mapping(self, v: Val, allowed: tuple[str, ...],
                required: tuple[str, ...] = ()) -> dict[str, Val]:
        """The entries of a mapping with a fixed set of string keys."""
        m = self._map(v)
        out: dict[str, Val] = {}
        for key, value in m.items():
            kloc = m.key_locs[key]
            if not isinstance(key, str) or key not in allowed:
                name = key if isinstance(key, str) else kloc.raw
                raise self.error(kloc.line, f"unknown key '{name}'{suggest(str(name), allowed)}",
                                 v.path)
            out[key] = v.child(key, m.locs[key], value)
        if missing := next((key for key in required if key not in out), None):
            raise self.error(v.line, f"missing required key '{missing}'", v.path)
        return out

    def pairs(self, v: Val, what: str, max_items: int) -> list[tuple[Val, Val]]:
        """(key, value) pairs of a free-form mapping whose keys must be strings."""
        m = self._map(v)
        if len(m) > max_items:
            self.fail(v, f"has {len(m)} entries, more than the {max_items} allowed")
        out = []
        for key, value in m.items():
            kloc = m.key_locs[key]
            kval = Val(key, kloc.line, v.path, kloc.raw)
            if not isinstance(key, str):
                if not kloc.raw:
                    self.fail(kval, f"an empty {what} is not allowed")
                self.fail(kval, f'{what} {kloc.raw!r} must be a string; quote it: "{kloc.raw}"')
            if not key or len(key) > MAX_STR // 16:
                self.fail(kval, f"{what} '{_short(key)}' is empty or too long")
            out.append((kval, v.child(key, m.locs[key], value)))
        return out

    def items(self, v: Val, what: str, max_items: int) -> list[Val]:
        """The items of a list."""
        if not isinstance(v.value, YSeq):
            self.fail(v, f"must be a {what}, not {kind(v.value)}")
        if len(v.value) > max_items:
            self.fail(v, f"has {len(v.value)} items, more than the {max_items} allowed")
        return [Val(item, loc.line, f"{v.path}[{i}]", loc.raw)
                for i, (item, loc) in enumerate(zip(v.value, v.value.locs, strict=True))]

    def _map(self, v: Val) -> YMap:
        if not isinstance(v.value, YMap):
            self.fail(v, f"must be a mapping, not {kind(v.value)}")
        return v.value

    def string(self, v: Val, *, max_len: int = MAX_STR, multiline: bool = False,
               allow_ints: bool = False, strip: bool = True) -> str:
        """A non-empty string; ``allow_ints`` also takes an unquoted integer as its text."""
        value = v.value
        if allow_ints and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            hint = f'; quote it: "{v.raw}"' if v.raw else ""
            self.fail(v, f"must be a string, not {kind(value)}{hint}")
        if strip:
            value = value.strip()
        if not value:
            self.fail(v, "must not be empty")
        if len(value) > max_len:
            self.fail(v, f"is {len(value)} characters long, more than the {max_len} allowed")
        if "\x00" in value or (not multiline and ("\n" in value or "\r" in value)):
            self.fail(v, "must not contain a NUL character" if multiline
                      else "must be a single line of text")
        return value

    def choice(self, v: Val, choices: tuple[str, ...]) -> str:
        """One of ``choices``, with a did-you-mean when it is none of them."""
        text = self.string(v, max_len=64)
        if text not in choices:
            names = ", ".join(f"'{c}'" for c in choices[:-1]) + f" or '{choices[-1]}'"
            self.fail(v, f"must be {names}, not '{_short(text)}'{suggest(text, choices)}")
        return text

    def boolean(self, v: Val) -> bool:
        if not isinstance(v.value, bool):
            self.fail(v, f"must be true or false, not {kind(v.value)}")
        return v.value

    def number(self, v: Val, *, low: float, high: float) -> float:
        """A finite number with ``low < n <= high``."""
        value = v.value
        if isinstance(value, str):  # YAML 1.1 reads 1e3 (no dot) as a string
            with contextlib.suppress(ValueError):
                value = float(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(v, f"must be a number, not {kind(value)}")
        if not math.isfinite(value) or not low < value <= high:
            self.fail(v, f"must be a number above {low:g} and at most {high:g}, not {value!r}")
        return float(value)

    def str_list(self, v: Val, *, max_items: int = 100, max_len: int = 256,
                 allow_ints: bool = False,
                 problem_of: Callable[[str], str | None] = lambda _: None) -> tuple[str, ...]:
        """A list of strings, each passing ``problem_of`` (which says why not, or ``None``)."""
        out = []
        for item in self.items(v, "list of strings", max_items):
            text = self.string(item, max_len=max_len, allow_ints=allow_ints, strip=not allow_ints)
            if problem := problem_of(text):
                self.fail(item, problem)
            out.append(text)
        return tuple(out)


def repo_path(path: str) -> str:
    """A repository path without empty and ``.`` components."""
    return "/".join(p for p in path.split("/") if p not in ("", "."))


def repo_path_problem(path: str) -> str | None:
    """Why ``path`` is not a safe path inside a repository, or ``None``."""
    if not path:
        return "is empty"
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path):
        return "contains a control character"
    if path.startswith("/"):
        return "is absolute"
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts:
        return "names no file"
    if ".." in parts:
        return "leaves the repository through '..'"
    if any(p.lower().rstrip(". ") == ".git" for p in parts):
        return "lies inside a .git directory"
    return None


def refname_problem(name: str) -> str | None:
    """Why ``name`` is not a branch name ``git check-ref-format --branch`` accepts, or ``None``."""
    if not name:
        return "is empty"
    if name in ("@", "HEAD"):
        return f"'{name}' is reserved by git"
    if name.startswith("-"):
        return "starts with '-'"
    for ch in name:
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            return "contains a control character"
        if ch in " ~^:?*[\\":
            return "contains a space" if ch == " " else f"contains '{ch}'"
    if bad := next((text for text in ("..", "@{", "//") if text in name), None):
        return f"contains '{bad}'"
    if name.startswith("/") or name.endswith("/"):
        return "starts or ends with '/'"
    if name.endswith("."):
        return "ends with '.'"
    for part in name.split("/"):
        if part.startswith("."):
            return f"has a component '{part}' starting with '.'"
        if part.endswith(".lock"):
            return f"has a component '{part}' ending with '.lock'"
        if len(part.encode("utf-8", "surrogateescape")) > 255:
            return "has a component longer than 255 bytes"
    return None


def is_local_path(url: str) -> bool:
    """True when git would read ``url`` as a path on this machine (no scheme, not host:path)."""
    if "://" in url:
        return False
    colon, slash = url.find(":"), url.find("/")
    return colon < 0 or (0 <= slash < colon)


def git_url_problem(url: str) -> str | None:
    """Why ``url`` is not an acceptable git remote, or ``None``."""
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        return "contains whitespace or a control character"
    if url.startswith("-"):
        return "starts with '-'"
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*::", url):
        return "uses a remote helper ('name::'), which is not allowed"
    if "://" not in url:
        return None
    scheme = url.split("://", 1)[0].lower()
    if scheme not in ("http", "https", "ssh", "git", "file", "git+ssh", "ssh+git"):
        return f"uses the scheme '{scheme}' (use https, ssh, git, file or a path)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return "is not a valid URL"
    if scheme != "file" and not parts.hostname:
        return "has no host"
    if parts.password is not None:
        return "must not contain a password (put the token in GITCODE_TOKEN)"
    if parts.username is not None and parts.scheme.lower() in ("http", "https"):
        return ("must not carry a user name or token before '@' (not shown; put the token in "
                "GITCODE_TOKEN)")
    return None


def http_url_problem(url: str) -> str | None:
    """Why ``url`` is not an http(s) URL usable as a forge web or API root, or ``None``."""
    if not url.lower().startswith(("http://", "https://")):
        return "must start with http:// or https://"
    return git_url_problem(url)


def repo_identity(url: str) -> str:
    """A key equal for two URLs naming the same repository (``.git``, slashes, case of host)."""
    if is_local_path(url):
        key = os.path.realpath(url)
    elif url.lower().startswith("file://"):
        key = os.path.realpath(unquote(urlsplit(url).path) or "/")
    elif "://" in url:
        try:
            parts = urlsplit(url)
            key = f"{(parts.hostname or '').lower()}/{parts.path.strip('/').lower()}"
        except ValueError:
            key = url.lower()
    else:  # scp-like [user@]host:path
        host, _, path = url.partition(":")
        key = f"{host.rsplit('@', 1)[-1].lower()}/{path.strip('/').lower()}"
    return key.rstrip("/").removesuffix(".git").rstrip("/")
