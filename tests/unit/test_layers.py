"""The layers (D3) as a test enforces them: the store backends are reached only through the opener (stores/opener.py),
no front-end, workflow or view module imports SQLite, PostgreSQL or the shared records itself, and no SQL lives outside
stores/ (D3, D9); and D3's contracts in pyproject.toml (import-linter) hold, and each fails on an import it forbids."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "server" / "flower"
BACKENDS = {"flower.stores.sqlite", "flower.stores.postgres", "flower.stores.shared"}
DRIVERS = {"sqlite3", "asyncpg"}
INSIDE = ("stores", "core")
"""The layers that may name a backend: the stores themselves (and their opener), and core's records protocol."""


def _module(path: Path) -> str:
    return ".".join(("flower", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")


def imports(path: Path) -> set[str]:
    """Every module `path` imports (relative imports resolved), at any depth of the file (lazy imports too)."""
    here = _module(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join([*base, node.module] if node.module else base)
            found.add(stem)
            found.update(f"{stem}.{alias.name}" for alias in node.names)  # `from .stores import sqlite`
    return found


def outside() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in INSIDE]


def test_the_module_walk_sees_what_it_looks_for() -> None:
    # The check below could pass by finding nothing: the opener itself imports a backend, and is found doing so.
    assert {"flower.stores.sqlite", "flower.stores.shared"} <= imports(PACKAGE / "stores" / "opener.py")
    assert "flower.stores.opener" in imports(PACKAGE / "sessions.py")  # a task's store is opened there (issue 34)
    assert len(outside()) > 20


def test_no_module_outside_stores_and_core_imports_a_backend_or_a_driver() -> None:
    offenders = {str(p.relative_to(PACKAGE)): sorted(imports(p) & (BACKENDS | DRIVERS)) for p in outside()}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_sql_outside_the_stores() -> None:
    sql = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|CREATE\s+TABLE)\b", re.S)
    found = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if p.relative_to(PACKAGE).parts[0] != "stores" and sql.search(p.read_text(encoding="utf-8"))]
    assert found == []


# -- D3 as contracts (pyproject.toml [tool.importlinter], run by `make lint`; issue 33) ------------------------------

PYPROJECT = ROOT / "pyproject.toml"
CONTRACTS = {c["id"]: c for c in tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]}
VIOLATIONS = {
    # contract id: (file of a copy of the package, an import appended to it that the contract forbids)
    "sdk": ("workflow/base.py", "import claude_agent_sdk", "flower.workflow.base -> claude_agent_sdk"),
    "sdk-public": ("stores/resume.py", "from claude_agent_sdk._internal import sessions",
                   "flower.stores.resume -> claude_agent_sdk._internal.sessions"),
    "front-ends": ("lsp/protocol.py", "from ..stores import sqlite", "flower.lsp.protocol -> flower.stores.sqlite"),
    "core": ("core/text.py", "from .. import status", "flower.core.text -> flower.status"),
    "layers": ("stores/jsonl.py", "from .. import runtime", "flower.stores.jsonl -> flower.runtime"),
}


def lint_imports(where: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the project's contracts over the package found first from `where` (its cwd and PYTHONPATH)."""
    command = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache", "--no-logo", str(PYPROJECT)]
    command += [arg for c in contracts for arg in ("--contract", c)]
    env = {**os.environ, "PYTHONPATH": str(where)}
    return subprocess.run(command, cwd=where, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_package_keeps_every_contract() -> None:
    done = lint_imports(ROOT / "server")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in done.stdout


@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_each_contract_fails_on_an_import_it_forbids(contract: str, tmp_path: Path) -> None:
    # The contract is checked on a copy of the package with one bad import added: were it written so that it could
    # not fail (a misspelt module, a layer left out), the copy would pass.
    copy = tmp_path / "flower"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    file, line, arrow = VIOLATIONS[contract]
    assert lint_imports(tmp_path, contract).returncode == 0  # the copy is the package's, unchanged so far
    with (copy / file).open("a", encoding="utf-8") as f:
        f.write(f"\n{line}\n")
    done = lint_imports(tmp_path, contract)
    # The arrow named is the injected one: it exists only in the copy, so the copy is what was checked.
    assert done.returncode == 1 and "BROKEN" in done.stdout and arrow in done.stdout, done.stdout + done.stderr


def test_the_layers_name_every_part_of_the_package() -> None:
    # A new top-level module outside every layer (and outside core's list) would be checked by nothing.
    parts = {f"flower.{p.stem}" for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    layered = {m.strip() for layer in CONTRACTS["layers"]["layers"] for m in re.split(r"[|:]", layer)}
    assert layered == parts
    assert set(CONTRACTS["core"]["forbidden_modules"]) == (parts - {"flower.core"}) | {"claude_agent_sdk"}
    # The SDK's importers are the runtime and the stores, with no exception left (issue 33: history reads through the
    # runtime's store, and the task opener, not the CLI, starts the prefetch worker).
    assert CONTRACTS["sdk"]["allowed_importers"] == ["flower.runtime", "flower.stores"]
    assert not [name for name, contract in CONTRACTS.items() if "ignore_imports" in contract]
