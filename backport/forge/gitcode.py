"""GitCode's writes (:class:`GitCodeForge`) on top of :mod:`.gitcode_reads` (see docs/gitcode.md).

A create is one transaction: the open PRs into its base read afresh, the POST (head as
``owner/repo:branch``), the number handed over at once, a read-back (404 is "not yet"), then
corrections: a PR shown from another head is closed once per branch (only when its base is the
one asked for and its author the token's user), create flags not taken are set by an update. A
create that failed in transit, answered 5xx or was refused as a duplicate is looked up before
anything is sent again. Every PATCH is checked against its answer or a read-back, sent again
form-encoded when a field did not take; draft falls back to the ``[WIP] `` title prefix, which
every PATCH of a draft keeps.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from backport.errors import BackportError
from backport.forge import gitcode_json as wire
from backport.forge.base import Comment, PullRequest
from backport.forge.gitcode_reads import GitCodeReads
from backport.forge.http import ApiError, ApiTransportError, seg
from backport.redact import redact

log = logging.getLogger(__name__)

LINK_ATTEMPTS = 4  # issue-link calls before a transient error is given up (for this run)
CREATED_READS = 5  # reads of a created PR before it is left unverified (404 is "not yet")

_create_locks: defaultdict[tuple[str, str, str, str], threading.Lock] = defaultdict(threading.Lock)
_create_locks_guard = threading.Lock()


@dataclasses.dataclass(frozen=True)
class _Ask:
    """What one create asked for, to judge and correct the PR GitCode made against."""

    head: str
    base: str
    title: str
    body: str
    draft: bool | None  # None: nothing asked of it (a PR judged later, `verify_pr`)
    head_sha: str | None
    close_related_issue: bool | None


def _not_in(wanted: list[int], linked: Sequence[int]) -> list[int]:
    return [i for i in wanted if i not in set(linked)]


class GitCodeForge(GitCodeReads):
    """Find-or-create PRs on GitCode (REST v5) from ``fork`` branches into ``upstream``."""

    def create_pr(self, head: str, base: str, title: str, body: str, *, draft: bool = False,
                  head_sha: str | None = None, close_related_issue: bool | None = None,
                  on_number: Callable[[int], None] | None = None) -> PullRequest:
        """Create unless another run opened it meanwhile, read back, correct (module doc)."""
        ask = _Ask(head, base, title, body, draft, head_sha, close_related_issue)
        with _create_locks_guard:
            lock = _create_locks[(self.api_url, self.upstream, head, base)]
        with lock:
            existing = self._opened_since(head, base)  # another run may have opened it
            if existing is not None:
                return existing
            made = self._post_pr(ask)
            if isinstance(made, PullRequest):  # a failed create's PR, found after all
                return made
            if on_number is not None:
                on_number(made)
            full = self._read_created(made, ask)
            return self._correct(made, full, ask)

    def verify_pr(self, number: int, head: str, base: str, *,
                  head_sha: str | None = None) -> PullRequest:
        """`create_pr`'s read-back and correction for a PR it left unverified."""
        ask = _Ask(head, base, "", "", None, head_sha, None)
        full = self._read_created(number, ask)
        return self._correct(number, full, ask)

    def _fork_branch_shown(self, head: str, head_sha: str | None) -> bool:
        """After a refused create: whether the fork branch (at ``head_sha``) showed only after a
        settle wait; raises when it never does."""
        sha: str | None = None
        owner, _, name = self.fork.partition("/")
        for attempt in range(2):  # a branch pushed a moment ago may take a while to show
            if attempt:
                self._sleep(self.settle)
            data = self._get_found(f"/repos/{seg(owner)}/{seg(name)}/branches/{seg(head)}")
            sha = None if data is None else wire.text(
                wire.obj(data if isinstance(data, dict) else {}, "commit").get("id"))
            if sha is not None and (not head_sha or not sha or sha == head_sha):
                return attempt > 0
        if sha is None:
            raise BackportError(
                "forge", f"The fork branch {self.fork}:{head} does not exist on GitCode (GET "
                         f"{self.api_url}/repos/{self.fork}/branches/{head} found nothing), so no "
                         "PR was opened; push it to the fork first.")
        if head_sha and sha != head_sha:
            raise BackportError(
                "forge", f"The fork branch {self.fork}:{head} is at {sha[:9]} on GitCode, not at "
                         f"the {head_sha[:9]} just pushed, so no PR was opened; check who pushed "
                         "to the fork, then run again.")
        return False

    def _post_pr(self, ask: _Ask) -> PullRequest | int:
        """POST the PR: its number, or the PR a failed create opened after all. Resent once
        after a lost reply, a 5xx, or a refusal for a fork branch that showed only later."""
        head, base = ask.head, ask.base
        same = wire.norm_repo(self.fork) == wire.norm_repo(self.upstream)
        head_form = head if same else f"{self.fork}:{head}"
        payload: dict[str, Any] = {"title": ask.title, "head": head_form, "base": base,
                                   "body": ask.body}
        if ask.draft:
            payload["draft"] = True
        if ask.close_related_issue is not None:
            payload["close_related_issue"] = ask.close_related_issue
        for last in (False, True):  # resent once at most
            try:
                answer = self.client.request("POST", self._pulls(), json=payload, retry=False)
            except ApiTransportError as exc:
                found = self._look_up_after_failure(head, base, exc.message)
                if found is not None:
                    return found
                if last:
                    raise
                continue
            except ApiError as exc:
                if exc.code == "auth":
                    raise
                said = exc.server_message  # "already exists", in either language, is a duplicate
                duplicate = "already exist" in said.lower() or "已存在" in said
                # Whatever the refusal, the PR may exist: look before sending anything else.
                found = self._look_up_after_failure(
                    head, base, exc.message,
                    settle=duplicate or exc.status in (409, 429) or exc.status >= 500)
                if found is not None:
                    return found
                if duplicate:
                    raise BackportError(
                        "forge", redact(f"GitCode says a PR from {self.fork}:{head} into "
                                        f"{self.upstream}:{base} already exists "
                                        f"({exc.server_message}), but no open PR from that fork "
                                        "branch is listed; look at the upstream's PRs, then run "
                                        "again."), details={"status": exc.status}) from None
                if not last and (exc.status >= 500 or 400 <= exc.status < 500
                                 and self._fork_branch_shown(head, ask.head_sha)):
                    continue
                raise BackportError(
                    "forge", redact(f"GitCode did not open a PR from {self.fork}:{head} into "
                                    f"{self.upstream}:{base}: POST {self.api_url}{self._pulls()} "
                                    f"with head={head_form!r} answered {exc.status}: "
                                    f"{exc.server_message}."),
                    details={"status": exc.status}) from None
            return self._number_of(answer, ask)
        raise AssertionError("the last POST returns or raises")

    def _look_up_after_failure(self, head: str, base: str, why: str, *,
                               settle: bool = True) -> PullRequest | None:
        """The PR a failed create may have opened: three fresh listings a settle wait apart (one
        without ``settle``), before anything is sent again."""
        log.warning("%s; checking whether the PR exists anyway", why.rstrip("."))
        for attempt in range(3 if settle else 1):
            if attempt:
                self._sleep(self.settle * attempt)
            found = self._match(self._open_prs(fresh=True).values(), head, base)
            if found is not None:
                return found
        return None

    def _number_of(self, data: Any, ask: _Ask) -> PullRequest | int:
        """The number a create answered; where it answered none, the PR listed since."""
        for number, _ in wire.numbered(iter([data] if isinstance(data, dict) else [])):
            return number
        said = (f"GitCode accepted the PR from {self.fork}:{ask.head} into "
                f"{self.upstream}:{ask.base} but returned no PR number")
        found = self._look_up_after_failure(ask.head, ask.base, said)
        if found is not None:
            return found
        raise BackportError("forge", f"{said}, and no such open PR is listed.")

    def _read_created(self, number: int, ask: _Ask) -> dict[str, Any]:
        """The created PR as GitCode shows it: an error is "not yet", read again after a settle
        wait; a head or SHA that looks wrong is read once more before it is judged."""
        full: dict[str, Any] | None = None
        why = ""
        good = 0
        for attempt in range(CREATED_READS):
            if attempt:
                self._sleep(self.settle * min(attempt, 3))
            try:
                data = self._get_pr_data(number)
            except BackportError as exc:
                if exc.code == "auth":
                    raise
                why = exc.message.rstrip(".")
                continue
            full, good = data, good + 1
            sha = wire.text(wire.obj(data, "head").get("sha"))
            suspect = (self._to_pr(data).head != ask.head or self._from_fork(data) is False
                       or bool(ask.head_sha and sha and sha != ask.head_sha))
            if not suspect or good >= 2:  # a suspect PR is read twice before it is judged
                break
        if full is None:
            url = f"{self.web_url}/{self.upstream}/pull/{number}"
            raise BackportError(
                "forge", redact(f"GitCode opened PR !{number} ({url}) from {self.fork}:{ask.head} "
                                f"but could not show it in {CREATED_READS} reads ({why}); it is "
                                "kept and judged on the next run."),
                details={"number": number, "url": url, "unverified": True})
        return full

    def _correct(self, number: int, full: dict[str, Any], ask: _Ask) -> PullRequest:
        """A PR whose head repository and branch are both shown and wrong is closed
        (`_close_wrong` raises); else kept, its create flags not taken set by `update_pr`."""
        pr = self._to_pr(full)
        with self._lock:
            self._created.add(number)
            if self._open is not None and pr.state == "open":
                self._open[number] = full
        repo = wire.repo_of(wire.obj(full, "head"))
        if bool(pr.head) and repo is not None and (
                pr.head != ask.head or wire.norm_repo(repo) != wire.norm_repo(self.fork)):
            self._close_wrong(number, pr, full, ask)
        if not pr.head or repo is None:
            log.warning("GitCode PR !%s does not show its head %s; assuming %s:%s, so it is "
                        "kept", number, "branch" if not pr.head else "repository",
                        self.fork, ask.head)
            pr = dataclasses.replace(pr, head=pr.head or ask.head,
                                     head_repo=pr.head_repo or self.fork)
        sha = wire.text(wire.obj(full, "head").get("sha"))
        if ask.head_sha and sha and sha != ask.head_sha:
            log.warning("GitCode PR !%s still shows head %s, not the %s pushed; its head "
                        "SHA may lag, so the PR is kept", number, sha[:9], ask.head_sha[:9])
        off = [key for key, value in (("draft", ask.draft),
                                      ("close_related_issue", ask.close_related_issue))
               if value is not None and wire.field(full, key) != value]
        if not off:
            return pr
        log.warning("GitCode did not take %s of the new PR !%s; setting it through an update",
                    ", ".join(off), pr.number)
        fixed = self.update_pr(pr.number, title=ask.title, body=ask.body, draft=ask.draft,
                               close_related_issue=ask.close_related_issue)
        return dataclasses.replace(fixed, head=pr.head, head_repo=pr.head_repo)

    def _close_wrong(self, number: int, pr: PullRequest, full: dict[str, Any],
                     ask: _Ask) -> NoReturn:
        """A PR opened from another head: closed once per branch where backport may, else left
        open; raises either way."""
        head, base = ask.head, ask.base
        source = f"{pr.head_repo}:{pr.head}"
        if wire.norm_repo(pr.head_repo) == wire.norm_repo(self.upstream):
            source = f"the upstream branch {source}"
        wanted = f"{self.fork}:{head}"
        author = wire.author_of(full)
        if pr.base != base or not author or author.casefold() != self.current_user().casefold():
            reason = (f"its base is {pr.base or 'not shown'}, not {base}" if pr.base != base
                      else f"its author is {author or 'not shown'}, not {self.current_user()}")
            raise BackportError(
                "forge", redact(f"GitCode PR !{number} ({pr.url}) shows its head as {source}, "
                                f"not the fork branch {wanted}, but {reason}, so backport left "
                                "it open: look at it, and close it by hand if it is wrong."),
                details={"number": number, "url": pr.url, "closed": False})
        with self._lock:
            again = (head, base) in self._closed_for
            self._closed_for.add((head, base))
        if again:
            raise BackportError(
                "forge", redact(f"GitCode again opened a PR from {source} instead of the fork "
                                f"branch {wanted} (PR !{number}, {pr.url}); backport closes such a "
                                "PR only once per branch, so it is left open: close it by hand."),
                details={"number": number, "url": pr.url, "closed": False})
        closed = self._close(number, pr)
        tail = ("backport closed it at once, so no wrong PR stays open" if closed is None else
                f"closing it failed ({closed}), so close it by hand")
        raise BackportError(
            "forge", redact(f"GitCode opened PR !{number} ({pr.url}) from {source} instead of "
                            f"the fork branch {wanted}; {tail}."),
            details={"number": number, "url": pr.url, "closed": closed is None})

    def _close(self, number: int, pr: PullRequest) -> str | None:
        """PATCH state=closed (again form-encoded if JSON did not take); None, or why not."""
        fields: Any = {"title": pr.title, "body": pr.body, "state": "closed"}
        try:
            for kind in ("json", "data"):
                self.client.request("PATCH", self._pulls(f"/{seg(number)}"), **{kind: fields})
                if self.get_pr(number).state != "open":
                    return None
            return "GitCode still shows it open"
        except BackportError as exc:
            return exc.message.rstrip(".")

    def update_pr(self, number: int, *, title: str, body: str, draft: bool | None = None,
                  close_related_issue: bool | None = None) -> PullRequest:
        """PATCH, checked and resent as the module says; the title keeps ``[WIP] `` for a PR
        that stays a draft (``draft`` None: as last seen)."""
        path = self._pulls(f"/{seg(number)}")
        with self._lock:
            known = dict((self._open or {}).get(number, {}))
        stays = draft if draft is not None else wire.field(known, "draft")
        title = wire.strip_wip(title)
        fields: dict[str, Any] = {"title": f"{wire.WIP_PREFIXES[0]}{title}" if stays else title,
                                  "body": body}
        if draft is not None:
            fields["draft"] = draft
        if close_related_issue is not None:
            fields["close_related_issue"] = close_related_issue
        answer = self.client.request("PATCH", path, json=fields)
        data, not_taken = self._check_update(number, fields, answer, known)
        if not_taken:
            log.warning("GitCode did not take %s of PR !%s sent as JSON; sending it form-encoded",
                        ", ".join(not_taken), number)
            form = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in fields.items()}
            answer = self.client.request("PATCH", path, data=form)
            data, not_taken = self._check_update(number, fields, answer, data)
        if "draft" in not_taken:  # through the title alone, which already says it
            log.warning("GitCode did not take draft=%s of PR !%s; setting it through the title",
                        draft, number)
            self.client.request("PATCH", path, json={"title": fields["title"], "body": body})
            data = self._get_pr_data(number)
            not_taken = [key for key in not_taken
                         if wire.field(data, key) != wire.as_sent(key, fields[key])]
        self._remember(number, data)
        return dataclasses.replace(self._to_pr(data), not_taken=tuple(not_taken))

    def _check_update(self, number: int, fields: dict[str, Any], answer: Any,
                      known: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The PR as it now is and the fields not taken; one the answer does not show is read
        back unless already as sent (draft always: it may follow the title)."""
        shown = answer if isinstance(answer, dict) else {}
        need_read = not known or any(
            wire.field(shown, key) is None and (key == "draft"
                                            or wire.field(known, key) != wire.as_sent(key, value))
            for key, value in fields.items())
        data = self._get_pr_data(number) if need_read else {**known, **shown}
        not_taken = [key for key, value in fields.items()
                     if wire.field(data, key) != wire.as_sent(key, value)]
        return data, not_taken

    def link_issues(self, number: int, issues: Sequence[int]) -> None:
        """One POST of the issues not linked yet, read back where the answer does not list
        them; a 5xx, 429 or lost reply tried again up to ``LINK_ATTEMPTS`` times."""
        wanted = [int(i) for i in dict.fromkeys(issues)]
        with self._lock:
            new = number in self._created
        if wanted and not new:
            wanted = _not_in(wanted, self.linked_issues(number))
        if not wanted:
            return
        path = self._pulls(f"/{seg(number)}/issues")
        for attempt in range(1, LINK_ATTEMPTS + 1):
            try:
                answer = self.client.request("POST", path, json=wanted, retry=False)
            except (ApiTransportError, ApiError) as exc:
                transient = not isinstance(exc, ApiError) or exc.status >= 500 \
                    or exc.status == 429
                if not transient or attempt == LINK_ATTEMPTS:
                    raise
                self._sleep(self.settle * attempt)
                wanted = _not_in(wanted, self.linked_issues(number))
                if not wanted:
                    return
                continue
            missing = _not_in(wanted, wire.issue_numbers(answer))
            if not missing or not _not_in(missing, self.linked_issues(number)):
                return
            said = ", ".join(f"#{i}" for i in missing)
            raise BackportError("forge", f"GitCode answered the link of issue {said} to PR "
                                         f"!{number} but does not list it as linked.")

    def add_comment(self, number: int, body: str) -> None:
        self.client.request("POST", self._pulls(f"/{seg(number)}/comments"), json={"body": body},
                            retry=False)

    def decorate(self, number: int, *, labels: tuple[str, ...] = (),
                 assignees: tuple[str, ...] = (), reviewers: tuple[str, ...] = (),
                 testers: tuple[str, ...] = ()) -> None:
        for role, names, payload in (
                ("labels", labels, list(labels)),
                ("assignees", assignees, {"assignees": ",".join(assignees)}),
                ("reviewers", reviewers, {"reviewers": ",".join(reviewers), "add": True}),
                ("testers", testers, {"testers": ",".join(testers), "add": True})):
            if names:  # each adds to the existing set, so a resend is harmless
                self.client.request("POST", self._pulls(f"/{seg(number)}/{role}"), json=payload,
                                    retry=True)

    def post_comment(self, number: int, body: str) -> Comment:
        """POST (never sent twice), then read back from the list."""
        answer = self.client.request("POST", self._pulls(f"/{seg(number)}/comments"),
                                     json={"body": body}, retry=False)
        posted = wire.comment_of(answer) if isinstance(answer, dict) else None
        listed = self.list_comments(number)
        with self._lock:  # read after the post: it serves the next listing of this PR too
            self._after_post[number] = listed
        if posted is None:
            raise BackportError("forge", f"GitCode accepted a comment on PR !{number} of "
                                         f"{self.upstream} but did not say which one it made.")
        return next((c for c in listed if c.id == posted.id), posted)

    def edit_comment(self, number: int, comment_id: str, body: str) -> Comment:
        """PATCH (its answer is ``{}``), checked by reading the comments; sent once more
        form-encoded when the JSON body did not take."""
        with self._lock:
            self._after_post.pop(number, None)
        path = self._pulls(f"/comments/{seg(comment_id)}")
        for as_json in (True, False):
            self.client.request("PATCH", path, json={"body": body} if as_json else None,
                                data=None if as_json else {"body": body})
            shown = next((c for c in self.list_comments(number) if c.id == comment_id), None)
            if shown is None:
                raise BackportError("forge", f"GitCode no longer lists comment {comment_id} on "
                                             f"PR !{number} of {self.upstream}.")
            if shown.body.strip() == body.strip():
                return shown
        raise BackportError("forge", f"GitCode answered the edit of comment {comment_id} on PR "
                                     f"!{number} of {self.upstream} but still shows the old text.")

    def delete_comment(self, number: int, comment_id: str) -> None:
        with self._lock:
            self._after_post.pop(number, None)
        self.client.request("DELETE", self._pulls(f"/comments/{seg(comment_id)}"))
