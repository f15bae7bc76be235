"""`backport docs`: a patch set's name stands for its API; a ref without docs says so."""

from __future__ import annotations

from tests.helpers.project import git, run_app, run_cli

PAGE = "docs/zh/api/native_api/pytorch_2-12-0/torch-distributed-elastic.md"


def add_docs(sandbox, tmp_path) -> None:
    work = tmp_path / "docs-edit"
    git(tmp_path, "clone", "--quiet", "--branch", "master", str(sandbox.upstream), str(work))
    page = work / PAGE
    page.parent.mkdir(parents=True)
    page.write_text("# torch.distributed.elastic\n\n### torch.distributed.elastic.metrics.put_metric"
                    "\n\n| 硬件 | 是否支持 |\n| --- | --- |\n| Atlas A2 训练系列产品 | &#10004; |\n",
                    encoding="utf-8")
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", "docs: list put_metric")
    git(work, "push", "--quiet", "origin", "master")


def test_docs_by_patch_set_name_and_refs_without_docs(sandbox, tmp_path):
    add_docs(sandbox, tmp_path)
    short = run_cli(sandbox.project, "docs", "--api", "put_metric", "--json")
    assert short.code == 0, short.err
    data = short.json()
    assert data["api"] == "torch.distributed.elastic.metrics.put_metric"
    assert [(v["version"], v["listed"]) for v in data["versions"]] == [("2.12.0", True)]

    bare = run_app(sandbox.project, "docs", "--api", "put_me")
    assert bare.code == 2
    assert "--api 'put_me' is neither a fully qualified API name" in bare.err
    assert "internal error" not in bare.err

    old = run_app(sandbox.project, "docs", "--api", "put_metric", "--ref", "v2.7.1")
    assert old.code == 2
    assert "branch 'v2.7.1'" in old.err and "has no docs tree docs/zh/api/native_api/pytorch_*/" \
        in " ".join(old.err.split())
