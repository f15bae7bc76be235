"""`backport init` never writes over a file, and its help says what it writes and what comes next."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.project import run_app

WRITTEN = ("branches.yaml", "patches/example-patch.yaml")


def test_init_never_replaces_a_file_and_writes_nothing_then(tmp_path: Path) -> None:
    for number, existing in enumerate(WRITTEN):
        project = tmp_path / f"project{number}"
        (project / existing).parent.mkdir(parents=True)
        (project / existing).write_text("mine\n", encoding="utf-8")
        result = run_app(tmp_path, "init", project.name)
        assert result.code == 2, result.err
        assert result.err.strip() == (f"error: {project.name}/{existing} already exists; init "
                                      "never replaces a file (move it away or pick another "
                                      "folder)")
        assert (project / existing).read_text(encoding="utf-8") == "mine\n"
        assert [p for p in project.rglob("*") if p.is_file()] == [project / existing]


def test_a_file_where_patches_goes_stops_init_before_it_writes(tmp_path: Path) -> None:
    (tmp_path / "patches").write_text("mine\n", encoding="utf-8")
    result = run_app(tmp_path, "init")
    assert result.code == 2, result.err
    assert result.err.strip() == ("error: patches already exists; init never replaces a file "
                                  "(move it away or pick another folder)")
    assert [p.name for p in tmp_path.iterdir()] == ["patches"]


def test_init_help_says_what_it_writes_and_what_comes_next(tmp_path: Path) -> None:
    result = run_app(tmp_path, "init", "--help")
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    for words in ("branches.yaml", "patches/example-patch.yaml", "follows your token",
                  "never replaces a file", "GITCODE_TOKEN", "backport env setup", "backport new",
                  "backport check", "backport apply"):
        assert words in text, words
    top = run_app(tmp_path, "--help")
    assert "backport init DIR" in top.out
