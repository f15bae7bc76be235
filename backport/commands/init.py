"""`backport init`: a starting project from what the package ships."""

from __future__ import annotations

import os
from pathlib import Path

import click

from backport.commands.common import echo
from backport.errors import BackportError
from backport.shipped import example_patch_yaml, real_map

EXAMPLE = Path("patches") / "example-patch.yaml"


def project_files() -> dict[Path, str]:
    """What `init` writes, by path relative to the project folder."""
    return {Path("branches.yaml"): real_map().read_text(encoding="utf-8"),
            EXAMPLE: example_patch_yaml().read_text(encoding="utf-8")}


def write_new(path: Path, text: str) -> None:
    """Create ``path`` with ``text``; never replaces a file (``FileExistsError``)."""
    with open(path, "x", encoding="utf-8") as out:
        out.write(text)


def _exists(path: Path | str) -> BackportError:
    return BackportError("usage", f"{path} already exists; init never replaces a file (move it "
                         "away or pick another folder)")


@click.command("init")
@click.argument("directory", required=False, default=".",
                type=click.Path(file_okay=False, path_type=Path))
def init_cmd(directory: Path) -> None:
    """Start a project in DIRECTORY (default: this folder): branches.yaml and patches/.

    \b
    Writes
      branches.yaml                   the real map of Ascend/pytorch: its release branches,
                                      each tested under its own torch / torch_npu; the fork
                                      follows your token (<login>/pytorch) unless you set it
      patches/example-patch.yaml      a commented example of a patch set
    and never replaces a file that is already there.

    \b
    Then:
      1. export GITCODE_TOKEN=...      your token; its login names your fork (<login>/pytorch)
      2. backport env setup            build each branch's torch / torch_npu environment
      3. backport new NAME --from REV --api FULL.NAME --issue N
                                       a patch set from your commits (patches/NAME/)
      4. backport check                then: backport apply --api NAME
    """
    files = {directory / name: text for name, text in project_files().items()}
    for path in files:
        if os.path.lexists(path):
            raise _exists(path)
    try:
        for path in files:  # every folder first: a file in a folder's place stops the whole init
            path.parent.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            write_new(path, text)
    except FileExistsError as exc:  # a file where a folder goes, or made since the check above
        raise _exists(exc.filename) from None
    except OSError as exc:
        raise BackportError("usage", f"cannot write {exc.filename}: {exc.strerror}") from None
    for path in files:
        echo(f"wrote {path}")
    echo("next: set GITCODE_TOKEN (your fork of Ascend/pytorch follows its login, unless "
         f"{directory / 'branches.yaml'} sets fork:), then `backport env setup`, "
         "`backport new NAME --from REV ...` and `backport check` (`backport init --help` says "
         "more)")
