"""`apply --from-pr A --from-pr B`: two PRs that are the same fix (merged on master, and by hand
on v2.12.0) carried into one target open one PR; the other set's branch is already-proposed,
naming it (issue 48 item 7)."""

from __future__ import annotations

from tests.helpers.source_pr import (
    NUMBER,
    land,
    put_metric_files,
    run,
    source_pr,
)

OURS = "lgxxx/pytorch"


def test_two_prs_of_one_fix_open_one_pr_into_a_target(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    again = server.add_pr(head_repo="lgxxx-other/pytorch", head="put-metric-v2.12.0",
                          base="v2.12.0", title="test: add put_metric coverage - v2.12.0",
                          body=pr.body, state="merged", author="lgxxx")
    again.issues, again.files = [3216], put_metric_files()
    land(sandbox, again.number, again.head_ref, base="v2.12.0")

    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--from-pr", str(again.number),
                 "--branch", "v2.7.1", "--skip-tests", "--json")
    assert result.code == 0, result.err
    ours = [p for p in server.prs.values() if p.head_repo == OURS and p.base_ref == "v2.7.1"]
    assert len(ours) == 1, [(p.number, p.head_ref) for p in ours]
    runs = {r["patch_set"]: r for r in result.json()["runs"]}
    (first,) = runs[f"pr-{NUMBER}"]["branches"]
    (second,) = runs[f"pr-{again.number}"]["branches"]
    assert first["status"] == "done" and first["pr"]["number"] == ours[0].number
    assert second["status"] == "already-proposed", second
    assert second["proposed"]["number"] == ours[0].number
    assert f"already proposed in PR !{ours[0].number}" in second["message"]
    assert f"of pr-{NUMBER} in this run" in second["message"]
