"""`backport init`: a starting project from what the package ships (`bundled/`): the real map
(its fork following the token), patches/ with a commented example, and the next command."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import click

from backport.bundled import DEMO_PATCH_SET, EXAMPLE_PATCH_YAML, REAL_MAP
from backport.commands.common import echo
from backport.errors import BackportError


def project_files(shipped: str | None = None) -> dict[Path, bytes]:
    """What `init` writes, by path in the project folder (``shipped``: that set too)."""
    files = {Path("branches.yaml"): REAL_MAP.read_bytes(),
             Path("patches") / "example-patch.yaml": EXAMPLE_PATCH_YAML.read_bytes()}
    if shipped not in (None, "put_metric"):
        raise BackportError("usage", f"no shipped patch set '{shipped}' (shipped: put_metric)")
    if shipped is not None:
        files |= {Path("patches") / shipped / path.relative_to(DEMO_PATCH_SET): path.read_bytes()
                  for path in sorted(DEMO_PATCH_SET.rglob("*")) if path.is_file()}
    return files


def _exists(path: Path | str) -> BackportError:
    return BackportError("usage", f"{path} already exists; init never replaces a file (move it "
                         "away or pick another folder)")


@click.command("init")
@click.argument("directory", required=False, default=".",
                type=click.Path(file_okay=False, path_type=Path))
@click.option("--from-shipped", "shipped", metavar="NAME",
              help="Also write the shipped patch set NAME as patches/NAME/ (put_metric: the "
                   "README's `backport apply --api put_metric`).")
def init_cmd(directory: Path, shipped: str | None) -> None:
    """Start a project in DIRECTORY (default: this folder): branches.yaml and patches/.

    \b
    Writes
      branches.yaml                   the real map of Ascend/pytorch (each release branch under
                                      its own torch / torch_npu); the fork follows your token
      patches/example-patch.yaml      a commented example of a patch set
      patches/NAME/                   with --from-shipped NAME: that shipped patch set
    and never replaces a file that is already there; it ends with the command to run next.

    \b
    Then:
      1. export GITCODE_TOKEN=...      your token; its login names your fork (<login>/pytorch)
      2. backport env setup            build each branch's torch / torch_npu environment
      3. backport new NAME --from REV --api FULL.NAME --issue N
                                       a patch set from your commits (patches/NAME/)
      4. backport check                then: backport apply --api NAME
    """
    files = {directory / name: data for name, data in project_files(shipped).items()}
    for path in files:
        if os.path.lexists(path):
            raise _exists(path)
    try:
        for path in files:  # every folder first: a file in a folder's place stops the whole init
            path.parent.mkdir(parents=True, exist_ok=True)
        for path, data in files.items():
            with open(path, "xb") as out:  # never replaces a file (FileExistsError)
                out.write(data)
    except FileExistsError as exc:  # a file where a folder goes, or made since the check above
        raise _exists(exc.filename) from None
    except OSError as exc:
        raise BackportError("usage", f"cannot write {exc.filename}: {exc.strerror}") from None
    for path in files:
        echo(f"wrote {path}")
    steps = ("`backport apply --api put_metric`" if shipped == "put_metric" else
             "`backport new NAME --from REV ...` and `backport apply --api NAME`")
    echo("then: set GITCODE_TOKEN (your fork of Ascend/pytorch follows its login, unless "
         f"{directory / 'branches.yaml'} sets fork:), `backport env setup`, {steps} "
         "(`backport init --help` says more)")
    where = "" if directory == Path(".") else f"cd {shlex.quote(str(directory))} && "
    echo(f"next: {where}backport check --offline")  # it works in what init wrote, offline
