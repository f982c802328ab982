"""The store backends are reached only through the opener (stores/opener.py): no front-end, workflow or view module
imports SQLite, PostgreSQL or the shared records itself, and no SQL lives outside stores/ (D3, D9)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

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
    assert "flower.stores.opener" in imports(PACKAGE / "runtime.py")
    assert len(outside()) > 20


def test_no_module_outside_stores_and_core_imports_a_backend_or_a_driver() -> None:
    offenders = {str(p.relative_to(PACKAGE)): sorted(imports(p) & (BACKENDS | DRIVERS)) for p in outside()}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_sql_outside_the_stores() -> None:
    sql = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|CREATE\s+TABLE)\b", re.S)
    found = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if p.relative_to(PACKAGE).parts[0] != "stores" and sql.search(p.read_text(encoding="utf-8"))]
    assert found == []
