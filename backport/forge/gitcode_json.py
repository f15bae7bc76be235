"""GitCode's JSON answers read into this package's values, whatever shape the service gives.

A field the object does not carry reads as empty (None where "not shown" must differ from
"empty"), numbers go through the one bounded parser, a draft's title is read without its
``[WIP] `` prefix. :func:`pages` reads a paginated list whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from backport.errors import BackportError
from backport.forge.base import Comment, PrFile
from backport.numerals import MAX_DIGITS, json_number
from backport.redact import redact


def norm_repo(value: str) -> str:
    return "/".join(part.strip() for part in value.split("/")).casefold()


def repo_of(side: dict[str, Any]) -> str | None:
    """``owner/repo`` of a PR's head or base object, or None when the object does not say."""
    repo = obj(side, "repo")
    for key in ("full_path", "full_name", "path_with_namespace"):
        value = repo.get(key)
        if isinstance(value, str) and "/" in value:
            return "/".join(p.strip() for p in value.split("/"))
    owner = obj(repo, "owner").get("login") or obj(repo, "namespace").get("path")
    return f"{owner}/{repo['path']}" if owner and repo.get("path") else None


def obj(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is a JSON object, else an empty one."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


WIP_PREFIXES = ("[WIP] ", "[WIP]", "WIP: ", "Draft: ")


def strip_wip(title: str) -> str:
    return next((title[len(p):] for p in WIP_PREFIXES if title.startswith(p)), title)


def pr_number(data: dict[str, Any]) -> int:
    """The PR's ``number`` (else ``iid``); ValueError unless of at most 10 digits."""
    found = json_number(data.get("number") if data.get("number") not in (None, "")
                        else data.get("iid"))
    if found is None:
        raise ValueError(f"not a number of at most {MAX_DIGITS} digits")
    return found


def author_of(data: dict[str, Any]) -> str:
    """The login of the PR's author ("" when the object does not say)."""
    names = (text(obj(data, key).get(name)) for key in ("user", "author")
             for name in ("login", "username"))
    return next((name for name in names if name), "")


def flag(value: Any) -> bool:
    """A documented boolean that may come as ``true``, ``1`` or ``"1"``."""
    return value is True or (not isinstance(value, bool) and str(value).strip().lower()
                             in ("1", "true"))


def pr_file(item: dict[str, Any]) -> PrFile | None:
    """One item of ``/pulls/{n}/files`` as the paths before and after the PR."""
    patch = obj(item, "patch")
    name = text(item.get("filename")).strip()
    new = text(patch.get("new_path")).strip() or name
    old = text(patch.get("old_path")).strip() or new
    if not new:
        return None
    if flag(patch.get("new_file")):
        return PrFile(None, new)
    if flag(patch.get("deleted_file")):
        return PrFile(old, None)
    return PrFile(old, new)


def is_draft(data: dict[str, Any]) -> bool:
    return bool(data.get("draft") or data.get("work_in_progress"))


def body_of(data: dict[str, Any]) -> str:
    return text(data.get("body")) or text(data.get("description"))


def field(data: dict[str, Any], key: str) -> Any:
    """One PR field as compared (title without a draft prefix, body stripped); None when
    ``data`` does not show it."""
    if key == "title":
        return strip_wip(data["title"]) if isinstance(data.get("title"), str) else None
    if key == "body":
        return body_of(data).strip() if ("body" in data or "description" in data) else None
    if key == "draft":
        return is_draft(data) if ("draft" in data or "work_in_progress" in data) else None
    value = data.get(key)
    return value if value is None else value in (True, "true", "True", 1)


def as_sent(key: str, value: Any) -> Any:
    """A value sent, as :func:`field` would show it once taken."""
    if key == "title":
        return strip_wip(str(value))
    if key == "body":
        return str(value).strip()
    return value


def issue_numbers(answer: Any) -> list[int]:
    found = (json_number(item.get("number") if isinstance(item, dict) else item)
             for item in (answer if isinstance(answer, list) else []))
    return [number for number in found if number is not None]


def comment_of(data: dict[str, Any]) -> Comment:
    """A comment item, named by ``note_id`` (what its PATCH takes) where it has one, else ``id``."""
    ident = data.get("note_id") if data.get("note_id") not in (None, "") else data.get("id")
    return Comment(id=str(ident), body=text(data.get("body")),
                   author=text(obj(data, "user").get("login")),
                   created_at=text(data.get("created_at")))


def pages(get: Callable[[str, dict[str, Any]], Any], url: str, path: str,
          params: dict[str, Any], key: Callable[[dict[str, Any]], str] | None = None,
          max_pages: int = 50) -> Iterator[dict[str, Any]]:
    """Every item of a paginated list, until an empty or repeated page, or one shorter than the
    documented default of 20 (``per_page`` may be ignored). A page that is not a list is an
    error, never the end. ``key`` names an item to tell a repeated page (default: ``id``)."""
    seen_pages: set[tuple[str, ...]] = set()
    named = key or (lambda i: str(i.get("id", i.get("number"))))
    for page in range(1, max_pages + 1):
        items = get(path, {**params, "page": page, "per_page": 100})
        if not isinstance(items, list):
            shape = "an object" if isinstance(items, dict) else "text" if items else "nothing"
            raise BackportError("forge", redact(
                f"GitCode API GET {url}{path} page {page} answered {shape} instead of a list; "
                "refusing to decide from a listing cut short whether a PR exists, so run "
                "again later."))
        shown = tuple(named(i) if isinstance(i, dict) else str(i) for i in items)
        if not items or shown in seen_pages:
            return
        seen_pages.add(shown)
        yield from (i for i in items if isinstance(i, dict))
        if len(items) < 20:
            return
    raise BackportError("forge", f"GitCode API GET {url}{path} returned more than {max_pages} "
                                 "pages; refusing to guess whether a PR already exists.")


def numbered(items: Iterator[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The PR items of a listing with their numbers (an item without one is skipped)."""
    for item in items:
        try:
            yield pr_number(item), item
        except (TypeError, ValueError):
            continue
