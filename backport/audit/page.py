"""The audit as one self-contained HTML page (inline CSS and a little JS, nothing fetched) and
as the terminal's summary. Every text that comes from a commit is HTML-escaped."""

from __future__ import annotations

from html import escape

from backport.audit.model import (
    BRANCH_MISSING,
    IGNORED,
    LANDED,
    MISSING,
    NOT_NEEDED,
    PROPOSED,
    STATES,
    Audit,
    Cell,
    Fix,
)
from backport.report.untrusted import untrusted

COLOURS = {LANDED: "#cdeccd", PROPOSED: "#cfe0f7", MISSING: "#f7cfcf", NOT_NEEDED: "#e6e6e6",
           IGNORED: "#f3efd9", BRANCH_MISSING: "#ffffff"}

_CSS = """body{font:13px/1.4 system-ui,sans-serif;margin:1em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top}th{background:#f4f4f4}
td.t{max-width:40em}a{color:inherit}#bar{margin:.8em 0}#bar *{margin-right:.6em}
""" + "".join(f"td.s-{state}{{background:{colour}}}" for state, colour in COLOURS.items())

_JS = """const q=id=>document.getElementById(id);
function f(){const b=q('fb').value,s=q('fs').value,t=q('ft').value.toLowerCase();let n=0;
for(const r of document.querySelectorAll('#changes tbody tr')){
let ok=(!t||r.dataset.text.includes(t));
if(ok&&s){ok=b?r.dataset['on_'+b.replace(/\\W/g,'_')]===s:
Object.keys(r.dataset).some(k=>k.startsWith('on_')&&r.dataset[k]===s);}
else if(ok&&b){ok=r.dataset['on_'+b.replace(/\\W/g,'_')]!==undefined;}
r.hidden=!ok;if(ok)n++;}q('shown').textContent=n;}
for(const id of ['fb','fs','ft'])q(id).addEventListener('input',f);"""


def _text(text: str) -> str:
    """Text from a commit, shown as itself: one line, no control character, HTML-escaped."""
    return escape(untrusted(text, where="code"))


def _key(branch: str) -> str:
    """The data attribute a branch's state is kept in (the JS makes the same of its name)."""
    return "on_" + "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in branch)


def _cell(cell: Cell, root: str, missing_why: str) -> str:
    state = cell.state
    if state == LANDED and cell.commit:
        tip = f"{cell.why}: {cell.commit}" if cell.why else cell.commit
        inner = (f'<a href="{root}/commit/{escape(cell.commit)}" title="{escape(tip)}">'
                 f"{LANDED} {escape(cell.commit[:9])}</a>")
    elif state == PROPOSED and cell.pr is not None:
        inner = f'<a href="{root}/pull/{cell.pr}">{PROPOSED} !{cell.pr}</a>'
    elif state == MISSING and cell.applies is None:  # a blob it needs could not be read
        inner = f'<span title="{_text(cell.why)}">{MISSING} (applies: unknown)</span>'
    elif state == MISSING:
        inner = f"{MISSING} ({'applies' if cell.applies else 'conflicts'})"
    elif state == BRANCH_MISSING:
        inner = escape(missing_why or "branch not upstream")
    else:
        inner = escape(state)
    return f'<td class="s-{state}">{inner}</td>'


def _row(fix: Fix, branches: tuple[str, ...], root: str, audit: Audit) -> str:
    """One fix: the change it started as (branch, commit, PR, title, date, author), the other
    branches it was merged on, and its state on every branch."""
    first = fix.first
    words = [first.author, *(w for m in fix.members
                             for w in (m.title, m.commit, f"!{m.pr}" if m.pr else "", m.branch))]
    text = untrusted(" ".join(words).lower(), where="code")
    picked = {b: fix.pick(b)[1] for b in branches}
    data = "".join(f' data-{_key(t)}="{escape(c.state)}"' for t, c in picked.items()
                   if t != first.branch)
    pr = (f'<a href="{root}/pull/{first.pr}">!{first.pr}</a>' if first.pr is not None
          else "")
    also = "".join(f'<br><small>also {escape(m.branch)} <a href="{root}/commit/{escape(m.commit)}">'
                   f"{escape(m.commit[:9])}</a>{f' !{m.pr}' if m.pr else ''}: "
                   f"{_text(m.title)}</small>" for m in fix.members[1:])
    cells = "".join(_cell(picked[b], root, audit.missing_branches.get(b, ""))
                    if b != first.branch else "<td>(its branch)</td>" for b in branches)
    return (f'<tr data-text="{escape(text)}"{data}><td>{escape(first.branch)}</td>'
            f'<td><a href="{root}/commit/{escape(first.commit)}">{escape(first.commit[:9])}'
            f"</a></td><td>{pr}</td><td class=\"t\">{_text(first.title)}{also}</td>"
            f"<td>{escape(first.date[:10])}</td><td>{_text(first.author)}</td>{cells}</tr>")


def render_html(audit: Audit, web_url: str, upstream: str) -> str:
    """The page: counts per branch and state, then one row per fix, one column per branch;
    commits and PRs link to ``upstream`` on the forge at ``web_url``."""
    root = escape(f"{web_url.rstrip('/')}/{upstream}")
    counts = audit.by_target()
    head = "".join(f"<th>{escape(s)}</th>" for s in STATES)
    count_rows = "".join(
        f"<tr><th>{escape(b)}</th>"
        + "".join(f'<td class="s-{s}" data-count="{s}">{counts[b][s]}</td>' for s in STATES)
        + "</tr>" for b in audit.branches)
    options = "".join(f'<option value="{escape(b)}">{escape(b)}</option>' for b in audit.branches)
    states = "".join(f'<option value="{s}">{s}</option>' for s in STATES)
    columns = "".join(f"<th>{escape(b)}</th>" for b in audit.branches)
    rows = "\n".join(_row(f, audit.branches, root, audit) for f in audit.fixes)
    offline = (f"<p>{escape(audit.prs_unread)}: the open PRs were not read, so no change is "
               "<b>proposed</b>.</p>" if audit.prs_unread else "")
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>backport audit since {escape(audit.since)}</title><style>{_CSS}</style>"
        f"</head><body><h1>Changes since {escape(audit.since)}</h1>{offline}"
        f'<table id="counts"><thead><tr><th>on branch</th>{head}</tr></thead>'
        f"<tbody>{count_rows}</tbody></table>"
        f'<div id="bar"><label>on branch <select id="fb"><option value="">any</option>{options}'
        f'</select></label><label>state <select id="fs"><option value="">any</option>{states}'
        f'</select></label><input id="ft" type="search" placeholder="search title, author, '
        f'commit, !N"><span><span id="shown">{len(audit.fixes)}</span> shown</span></div>'
        f'<table id="changes"><thead><tr><th>branch</th><th>commit</th><th>PR</th><th>title</th>'
        f"<th>date</th><th>author</th>{columns}</tr></thead><tbody>\n{rows}\n</tbody></table>"
        f"<script>{_JS}</script></body></html>\n")


def summary_lines(audit: Audit) -> list[str]:
    """The terminal summary: counts of fixes per (branch a fix started on, other branch), then
    each fix missing on a branch that applies cleanly, once."""
    lines = [f"Changes since {audit.since} on {', '.join(audit.branches)}: {len(audit.changes)} "
             f"({len(audit.fixes)} fixes)"]
    if audit.prs_unread:
        lines.append(f"{audit.prs_unread}: the open PRs were not read, so none is counted as "
                     "proposed")
    lines += [f"{branch}: {why}" for branch, why in audit.missing_branches.items()]
    for (source, target), counter in sorted(audit.counts().items()):
        states = ", ".join(f"{counter[s]} {s}" for s in STATES if counter[s])
        lines.append(f"  {source} -> {target}: {states}")
    for target in audit.branches:
        clean = audit.missing_clean(target)
        if clean:
            lines.append(f"Missing on {target} and applying cleanly ({len(clean)}):")
            lines += [f"  {c.commit[:9]} {f'!{c.pr}' if c.pr else '':>7} {c.branch}: "
                      f"{untrusted(c.title, where='code')}" for c in clean]
    return lines


def from_pr_arguments(audit: Audit, target: str) -> list[str]:
    """``--from-pr N`` for each fix missing on ``target`` that applies cleanly (`missing_clean`)."""
    return [f"--from-pr {c.pr}" for c in audit.missing_clean(target) if c.pr is not None]
