"""The import rule of docs/architecture.md, checked on the package's own source with ``ast``."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence
from pathlib import Path

import backport
from tests.unit.conftest import nodes, tree

PACKAGE = Path(backport.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
IMPORTS = (ast.Import, ast.ImportFrom)


def _names(cell: str) -> set[str]:
    """Module names of the code spans in a table cell: `git/` -> git, `envs/model.py` -> envs.model."""
    spans = re.findall(r"`([A-Za-z_][A-Za-z0-9_/]*(?:\.py)?)`", cell)
    return {span.removesuffix(".py").strip("/").replace("/", ".") for span in spans}


@functools.cache
def import_rule() -> dict[str, frozenset[str]]:
    """The table under "## What may import what": part -> the modules it may import.

    A part is a top-level module (`errors.py`) or folder (`git/`) of the package; the word
    "shared" in the right column stands for every part of the first row.
    """
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert "## What may import what" in text, "docs/architecture.md states no import rule"
    section = text.split("## What may import what", 1)[1].split("\n## ", 1)[0]
    rule: dict[str, frozenset[str]] = {}
    shared: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        left, right = line.strip().strip("|").split("|")[:2]
        parts, allowed = _names(left), _names(right)
        shared = shared or parts  # the first row: its parts may import one another
        if "shared" in right:
            allowed |= shared
        for part in parts:
            rule[part] = frozenset(allowed)
    return rule


def may_import(part: str, module: str) -> bool:
    """True when ``part`` may import ``module`` (a name relative to the package, e.g. ``git.run``)."""
    return part_of(module) == part or any(
        module == entry or module.startswith(entry + ".") for entry in import_rule()[part])


def part_of(module: str) -> str:
    """``git.run`` -> ``git``; ``__init__`` (the package itself) -> ``__init__``."""
    return module.split(".", 1)[0]


def imported_modules(path: Path, module: str) -> set[str]:
    """Every package module ``path`` imports, at any depth, named relative to the package.

    ``module`` is the importing module's own relative name (``report.summary``); relative imports
    are resolved against it, and ``from backport.x import name`` yields ``x`` and ``x.name``.
    """
    own = ["backport", *module.split(".")] if module != "__init__" else ["backport"]
    package = own if path.name == "__init__.py" else own[:-1]
    found: set[str] = set()
    for node in nodes(path, *IMPORTS):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {"__init__" if name == "backport" else name.removeprefix("backport.")
            for name in found if name == "backport" or name.startswith("backport.")}


def _module_of(name: str, modules: dict[str, Path]) -> str:
    """The module an imported name lives in: ``git.run.git`` -> ``git.run``, ``__version__`` -> ``__init__``."""
    while name not in modules:
        if "." not in name:
            return "__init__"
        name = name.rpartition(".")[0]
    return name


def package_modules() -> dict[str, Path]:
    """Relative module name -> file, for every module of the package that runs in the tool."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        if "scripts" in rel.parts:  # run inside branch environments; they never import backport
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" and len(rel.parts) > 1 else rel.parts
        modules[".".join(parts)] = path
    return modules


def violations() -> list[str]:
    """One line per import that breaks the rule."""
    modules = package_modules()
    problems = []
    for module, path in modules.items():
        part = part_of(module)
        if part not in import_rule():
            problems.append(f"{module}: '{part}' is not in the import rule")
            continue
        for name in sorted(imported_modules(path, module)):
            name = _module_of(name, modules)
            if not may_import(part, name):
                problems.append(f"backport.{module} imports backport.{name}")
    return problems


def test_every_import_follows_the_rule() -> None:
    assert violations() == []


def test_the_rule_names_every_part_of_the_package() -> None:
    parts = {part_of(module) for module in package_modules()}
    assert parts == set(import_rule())


def test_the_rule_finds_every_kind_of_import(tmp_path: Path) -> None:
    path = tmp_path / "summary.py"
    path.write_text("import os\nfrom backport.pipeline.journal import Journal\n"
                    "from ..pipeline import run\nfrom . import body\n\n\n"
                    "def later():\n    import backport.cli\n", encoding="utf-8")
    names = imported_modules(path, "report.summary")
    assert {"pipeline.journal", "pipeline.run", "report.body", "cli"} <= names
    assert "os" not in names
    assert not may_import("report", "pipeline.journal")
    assert not may_import("report", "cli")
    assert may_import("report", "report.body")


def test_services_share_only_the_model_modules() -> None:
    assert may_import("report", "envs.model")
    assert not may_import("report", "envs.runner")
    assert not may_import("git", "forge.gitcode")
    assert not may_import("config", "pipeline.journal")


# `git credential fill` runs with an environment the caller gives whole (not laid over this
# process's) and `forge/` may not import `git/`; it asks for a token and never prompts.
GIT_OUTSIDE_THE_RUNNER = {"forge.token"}


def git_processes(path: Path) -> list[str]:
    """What in ``path`` starts git other than through the runner: GitPython, or a call of any
    process function whose argv starts with ``"git"``."""
    found = []
    for node in nodes(path, *IMPORTS, ast.Call):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] == "git"]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] == "git":
                found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = ast.unparse(func)
            argv = node.args[0]
            if isinstance(argv, ast.List) and argv.elts:
                first = argv.elts[0]
                if isinstance(first, ast.Constant) and first.value == "git":
                    found.append(f"{name}(['git', ...]) line {node.lineno}")
    return found


def test_only_the_runner_starts_git() -> None:
    found = {module: git_processes(path) for module, path in package_modules().items()
             if module != "git.run" and module not in GIT_OUTSIDE_THE_RUNNER}
    assert {module: calls for module, calls in found.items() if calls} == {}


def test_the_git_scan_sees_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("import subprocess\nimport git\nfrom backport import process\n\n"
                    "subprocess.run(['git', 'status'], check=False)\nprocess.run(['git', 'log'])\n",
                    encoding="utf-8")
    assert git_processes(path) == ["import git", "subprocess.run(['git', ...]) line 5",
                                   "process.run(['git', ...]) line 6"]


def process_imports(path: Path) -> list[str]:
    """Imports in ``path`` of a way to start a process other than `backport.process`:
    ``subprocess``, GitPython, ``os.system`` / ``os.popen`` / ``os.exec*`` / ``os.spawn*``."""
    found = []
    for node in nodes(path, *IMPORTS, ast.Attribute):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] in ("subprocess", "git", "pty")]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] in ("subprocess", "git", "pty"):
                found.append(f"line {node.lineno}: from {node.module} import ...")
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "os"
              and node.attr.startswith(("system", "popen", "exec", "spawn", "fork", "posix_spawn"))):
            found.append(f"line {node.lineno}: os.{node.attr}")
    return found


# The one process runner (git's runner starts git through it).
PROCESS_STARTERS: dict[str, list[str] | None] = {"process": None}


def test_only_the_process_module_starts_processes() -> None:
    found = {module: [line for line in process_imports(path)
                      if not line.endswith(tuple(PROCESS_STARTERS.get(module) or ()))]
             for module, path in package_modules().items()
             if module not in PROCESS_STARTERS or PROCESS_STARTERS[module] is not None}
    assert {module: names for module, names in found.items() if names} == {}


def test_the_process_scan_sees_each_way(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("import subprocess\nfrom git import Repo\nimport os\n\nos.execvp('a', [])\n",
                    encoding="utf-8")
    assert process_imports(path) == ["line 1: import subprocess", "line 2: from git import ...",
                                     "line 5: os.execvp"]


def _modules_spelling(text: str) -> set[str]:
    """Modules with a string constant that contains ``text``."""
    found = set()
    for module, path in package_modules().items():
        for node in nodes(path, ast.Constant):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if text in node.value:
                    found.add(module)
    return found


def test_the_autoload_variable_is_spelled_once() -> None:
    # envs/scripts/ run inside branch environments without the package; they are not counted.
    assert _modules_spelling("TORCH_DEVICE_BACKEND_AUTOLOAD") == {"envs.model"}


def test_not_found_is_defined_once() -> None:
    # Other "not found" strings match what git or a forge says; only the evidence value counts.
    defining = set()
    for module, path in package_modules().items():
        for node in tree(path).body:
            value = getattr(node, "value", None)
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(value, ast.Constant):
                if value.value == "not found":
                    defining.add(module)
    assert defining == {"envs.model"}


def _on_self(call: ast.Call) -> bool:
    """``dataclasses.replace(self, ...)``: a value's own named transition."""
    return bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id == "self"


def test_pipeline_changes_records_only_by_named_transitions() -> None:
    """No call in `pipeline/` changes a record (or PR info) by a bag of field keywords: each
    change is a named transition of the value."""
    found = []
    for path in sorted((PACKAGE / "pipeline").glob("*.py")):
        for node in nodes(path, ast.Call):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("replace", "update", "change", "fail", "stop")
                    and node.keywords and not _on_self(node)):
                found.append(f"{path.name}:{node.lineno} .{node.func.attr}(...)")
    assert not found, found


# -- a branch's flow ---------------------------------------------------------------------------
SCHEDULER_CALLS = ("submit", "ended", "finished", "wait", "wait_newer", "Schedule",
                   "SetRun", "run_branch", "take_turns")


def handed_closures(path: Path) -> list[str]:
    """Lambdas, nested functions and partials that ``path`` hands to the scheduler or the pool
    (the schedule is told of jobs and step names, never given a function to call later)."""
    nested = {inner.name for outer in nodes(path, ast.FunctionDef)
              if isinstance(outer, ast.FunctionDef)
              for inner in ast.walk(outer)
              if isinstance(inner, ast.FunctionDef) and inner is not outer}
    found = []
    for node in nodes(path, ast.Call):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in SCHEDULER_CALLS:
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            partial = isinstance(arg, ast.Call) and "partial" in ast.unparse(arg.func)
            if isinstance(arg, ast.Lambda) or partial or (
                    isinstance(arg, ast.Name) and arg.id in nested):
                found.append(f"{path.name}:{node.lineno} {name}({ast.unparse(arg)[:40]})")
    return found


def test_no_closure_is_handed_to_the_scheduler() -> None:
    found = [hit for path in sorted((PACKAGE / "pipeline").glob("*.py"))
             for hit in handed_closures(path)]
    assert found == []
    import inspect

    from backport.pipeline.session import Schedule
    takes = {name: str(inspect.signature(method)) for name, method in vars(Schedule).items()
             if callable(method)}
    assert takes and not [name for name, sig in takes.items() if "Callable" in sig]


def test_the_closure_scan_sees_each_kind(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("def run(pool, schedule, job):\n"
                    "    def later():\n        pass\n"
                    "    pool.submit(lambda: job)\n    pool.submit(later)\n"
                    "    pool.submit(functools.partial(f, job))\n    pool.submit(flow.run, job)\n"
                    "    schedule.arrive(job, 'pr', True)\n", encoding="utf-8")
    assert [hit.split(" ", 1)[0] for hit in handed_closures(path)] == ["m.py:4", "m.py:5",
                                                                     "m.py:6"]


def test_the_step_list_names_every_step() -> None:
    """`pipeline/run.STEPS` is the order of a branch's flow: every ``*_step`` function of
    `pipeline/` is run by the one entry of its name, and each entry's function runs it."""
    from backport.pipeline.run import STEPS

    names = [step.name for step in STEPS]
    assert len(set(names)) == len(names)
    defined = {node.name.removesuffix("_step")
               for path in sorted((PACKAGE / "pipeline").glob("*.py"))
               for node in tree(path).body
               if isinstance(node, ast.FunctionDef) and node.name.endswith("_step")
               and not node.name.startswith(("_", "run_"))}
    assert defined == set(names)
    import inspect
    for step in STEPS:
        assert step.run.__name__ == f"{step.name}_step", step.name  # the step itself, no adapter
        assert list(inspect.signature(step.run).parameters) == ["run", "job"], step.name


def test_every_record_change_is_checked_against_the_table_of_moves(tmp_path: Path) -> None:
    """`Journal.change` refuses a move `states.MOVES` does not allow, naming both states,
    and keeps the record as it was; the table names every state."""
    from backport.errors import BackportError
    from backport.pipeline.journal import Journal
    from backport.states import MOVES, Status

    assert set(MOVES) == set(Status)
    assert all(here in MOVES[here] for here in Status)
    journal = Journal.load(tmp_path, "put_metric", "torch.x")
    journal.record("v2.7.1", "fb")
    try:
        journal.change("v2.7.1", lambda r: r.pushed("a" * 40))
    except BackportError as exc:
        assert exc.code == "internal" and "from pending to pushed" in exc.message
    else:
        raise AssertionError("pending -> pushed was allowed")
    assert journal.get("v2.7.1").status is Status.PENDING
    assert journal.change("v2.7.1", lambda r: r.failed(Status.FAILED, "x", None)).status == "failed"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(path: Path) -> list[str]:
    """Names with a leading underscore that ``path`` imports from another module of the package,
    or reads off a name it imported from one (``Status._value2member_map_``): a name shared
    between modules is public; one used by a single module lives there."""
    found, imported = [], set()
    for node in nodes(path, ast.ImportFrom):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("backport")):
            imported |= {alias.asname or alias.name for alias in node.names}
            found += [f"{path.name}:{node.lineno} imports {alias.name} from {node.module or '.'}"
                      for alias in node.names if _private(alias.name)]
    for node in nodes(path, ast.Attribute):
        if (isinstance(node, ast.Attribute) and _private(node.attr)
                and isinstance(node.value, ast.Name) and node.value.id in imported):
            found.append(f"{path.name}:{node.lineno} reads {node.value.id}.{node.attr}")
    return found


def test_no_module_imports_a_private_name_from_another() -> None:
    found = {module: private_imports(path) for module, path in package_modules().items()}
    assert {module: names for module, names in found.items() if names} == {}


def test_no_test_imports_a_private_name_of_the_package() -> None:
    found = {str(path.relative_to(TESTS)): private_imports(path)
             for path in sorted(TESTS.rglob("*.py"))}
    assert {path: names for path, names in found.items() if names} == {}


def test_the_private_import_scan_sees_every_kind(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("from backport.git.apply import _SAFE, committer_env\nfrom .x import _y\n"
                    "from os import _exit\nfrom backport import __version__\n"
                    "from backport.states import Status\n"
                    "ok = 'x' in Status._value2member_map_\nos = _exit._z\n", encoding="utf-8")
    assert private_imports(path) == ["m.py:1 imports _SAFE from backport.git.apply",
                                     "m.py:2 imports _y from x",
                                     "m.py:6 reads Status._value2member_map_"]


TESTS = Path(__file__).resolve().parents[1]
LAYERS = ("unit", "integration", "system")


def imports_of_test_modules(root: Path) -> list[str]:
    """One line per import, in a test module or helper under ``root``, of another test module
    (a ``test_*.py``): shared helpers live in ``tests/helpers/`` or a ``conftest.py``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        package = ["tests", *path.parent.relative_to(root).parts]
        for node in nodes(path, *IMPORTS):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package[: len(package) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            found += [f"{path.relative_to(root.parent)}:{node.lineno} imports {name}"
                      for name in names
                      if name.startswith("tests.") and name.rpartition(".")[2].startswith("test_")]
    return found


def outside_the_layers(root: Path) -> list[str]:
    """Test modules under ``root`` (the tests folder) that are in none of its layer folders."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("test_*.py")
                  if path.relative_to(root).parts[0] not in LAYERS)


def test_every_test_module_is_in_a_layer() -> None:
    assert outside_the_layers(TESTS) == []


def test_the_layer_scan_names_a_module_outside(tmp_path: Path) -> None:
    for rel in ("unit/git/test_a.py", "system/test_b.py", "forge/test_c.py", "test_d.py",
                "helpers/gitrepos.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert outside_the_layers(tmp_path) == ["forge/test_c.py", "test_d.py"]


def test_no_test_module_imports_another() -> None:
    assert imports_of_test_modules(TESTS) == []


def test_the_test_import_scan_sees_every_kind(tmp_path: Path) -> None:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "test_a.py").write_text(
        "from tests.report.test_body import check\nfrom .test_b import x\n"
        "import tests.git.test_c\nfrom tests.helpers import project\nfrom .conftest import y\n",
        encoding="utf-8")
    assert imports_of_test_modules(tmp_path) == [
        f"{tmp_path.name}/pipeline/test_a.py:1 imports tests.report.test_body",
        f"{tmp_path.name}/pipeline/test_a.py:2 imports tests.pipeline.test_b",
        f"{tmp_path.name}/pipeline/test_a.py:3 imports tests.git.test_c"]


# Test folders of the repository's own code outside the package: scripts/, bench/, .ci and
# examples/ci, the packaging (pyproject, the wheel), patches/.
OWN_CODE = frozenset({"scripts", "bench", "ci", "packaging", "patches"})


def folders_mirroring_nothing(root: Path, package: Path) -> list[str]:
    """Folders of test modules in ``root``'s layers that are neither a package's mirror
    (``unit/git`` for ``backport/git/``) nor one of the repository's own code (``OWN_CODE``)."""
    found = set()
    for layer in LAYERS:
        for path in (root / layer).rglob("test_*.py"):
            folder = path.parent.relative_to(root / layer)
            if folder.parts and folder.as_posix() not in OWN_CODE \
                    and not (package / folder / "__init__.py").is_file():
                found.add(f"{layer}/{folder.as_posix()}")
    return sorted(found)


def test_every_test_folder_mirrors_a_package_or_the_repositorys_own_code() -> None:
    assert folders_mirroring_nothing(TESTS, PACKAGE) == []


def test_the_mirror_scan_names_a_feature_folder(tmp_path: Path) -> None:
    (tmp_path / "backport" / "git").mkdir(parents=True)
    (tmp_path / "backport" / "git" / "__init__.py").write_text("")
    for rel in ("unit/git/test_a.py", "unit/test_b.py", "integration/scripts/test_c.py",
                "system/sandbox/test_d.py", "unit/git/deep/test_e.py", "unit/data/x.json"):
        (tmp_path / "tests" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / rel).write_text("")
    assert folders_mirroring_nothing(tmp_path / "tests", tmp_path / "backport") == [
        "system/sandbox", "unit/git/deep"]



# The steps of "what applying this series to this base gives", decided in one place.
DECISION_STEPS = frozenset({"already_applied", "added_tests", "present_tests", "apply_series",
                            "try_siblings", "source_problems"})


def called_names(source: str) -> set[str]:
    """Names of every function ``source`` calls (``f(…)`` and ``mod.f(…)``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.add(func.id)
            elif isinstance(func, ast.Attribute):
                found.add(func.attr)
    return found


def test_check_and_apply_call_one_decision() -> None:
    """`check` and the apply step both call `pipeline/decide.decide`, and neither takes a step
    of that decision itself: a rule of it changes in one place."""
    pipeline = PACKAGE / "pipeline"
    apply_step = [p for p in sorted(pipeline.glob("*.py"))
                  if "def apply_step(" in p.read_text(encoding="utf-8")]
    assert apply_step, "no module of pipeline/ defines apply_step"
    for path in [pipeline / "check.py", *apply_step]:
        calls = called_names(path.read_text(encoding="utf-8"))
        assert "decide" in calls, f"{path.name} does not call pipeline.decide.decide"
        assert not calls & DECISION_STEPS, f"{path.name} decides itself: {calls & DECISION_STEPS}"


def test_the_decision_scan_sees_both_kinds_of_call() -> None:
    assert called_names("import m\nm.apply_series(w)\ntry_siblings(w)\n") >= {
        "apply_series", "try_siblings"}


# `backport list` prints its jobs as `API=… BRANCH=…` lines: the CI matrix, not evidence.
# A source PR's body names its API as `API=…` (the upstream template's line), read by `new --from-pr`
# and written by the demo's merged PR: the PR's text, not evidence.
EVIDENCE_KEY_ELSEWHERE = {"commands.listing": {"API"}, "pipeline.from_pr": {"API"},
                          "demo.sandbox": {"API"}}


def evidence_keys_spelled(path: Path, keys: Sequence[str]) -> set[str]:
    """The evidence keys (and the result heading) a string in ``path`` spells: as ``KEY=``, or
    alone where the key is no plain word (``HEAD_COMMIT``, not ``NPU``); docstrings and f-string
    parts count."""
    spelled = set()
    for node in nodes(path, ast.Constant):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for key in keys:
                if node.value == key and "_" in key:
                    spelled.add(key)
                elif "=" in node.value and re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}=",
                                                     node.value):  # no "=", no KEY=
                    spelled.add(key)
            if "RESULT:" in node.value:
                spelled.add("RESULT:")
    return spelled


def test_evidence_keys_are_spelled_only_in_the_table() -> None:
    from backport.report.wording import KEYS

    found = {module: evidence_keys_spelled(path, KEYS) - EVIDENCE_KEY_ELSEWHERE.get(module, set())
             for module, path in package_modules().items() if module != "report.wording"}
    assert {module: keys for module, keys in found.items() if keys} == {}


def test_the_evidence_key_scan_sees_each_spelling(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text('"""Reads ``NOTE=``."""\nx = f"HEAD_COMMIT={1}"\ny = "TORCH_NPU"\nv = "NPU"\nz = "RESULT:"\n'
                    'w = "TORCH_NPU_X=1 DONOTE=2"\n', encoding="utf-8")
    assert evidence_keys_spelled(path, ("NOTE", "HEAD_COMMIT", "TORCH_NPU", "NPU", "PATCH_TESTS")) == {
        "NOTE", "HEAD_COMMIT", "TORCH_NPU", "RESULT:"}


def commands_without_tests(commands: Path, tests: list[Path]) -> list[str]:
    """Command modules (``backport/commands/X.py``) with no ``tests/LAYER/commands/test_X*.py``."""
    names = sorted(p.stem for p in commands.glob("*.py") if p.stem != "__init__")
    tested = [p.stem.removeprefix("test_") for folder in tests for p in folder.glob("test_*.py")]
    return [name for name in names
            if not any(t == name or t.startswith(f"{name}_") for t in tested)]


def test_every_command_module_has_its_test_module() -> None:
    assert commands_without_tests(PACKAGE / "commands",
                                  [TESTS / layer / "commands" for layer in LAYERS]) == []


def test_the_command_mirror_matches_by_prefix(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "t").mkdir()
    for name in ("__init__", "env", "new", "status"):
        (tmp_path / "c" / f"{name}.py").write_text("")
    for name in ("test_env_probe", "test_newer", "test_status"):
        (tmp_path / "t" / f"{name}.py").write_text("")
    assert commands_without_tests(tmp_path / "c", [tmp_path / "t"]) == ["new"]


def test_no_command_runs_another_through_click() -> None:
    """A command that needs another's work calls the plain function below it (`trigger` runs
    `apply.run`), never the other's click function through ``ctx.invoke``."""
    found = [f"{path.name}: {name}" for path in sorted((PACKAGE / "commands").glob("*.py"))
             for name in called_names(path.read_text(encoding="utf-8"))
             if name in ("invoke", "forward")]
    assert not found, found
