"""The shape of the house (issue 33): import graph, worst functions and files, `Any` count, of one checkout.

    python benchmarks/house.py [CHECKOUT]        # default: this checkout

Measured from the code as text (ast), nothing is imported or run. Complexity and maintainability come from radon
when it is installed (`pip install radon`), else that part says so in one line. Run it on two checkouts (e.g. a
`git worktree add /tmp/before <commit>`) to compare before and after.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

PACKAGE = "flower"


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name → file, for every module of the package under `root/server`."""
    base = root / "server"
    found = {}
    for path in sorted((base / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules `name` imports (anywhere in the file: lazy imports are edges too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                stem = ".".join(anchor + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # `from . import retention` imports the module retention, not (only) the package around it.
            targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def layer(module: str) -> str:
    """A module's package below `flower` (`flower.core.lock` → `core`; a top-level module is its own)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def any_count(paths: list[Path]) -> int:
    """Uses of the name `Any` (typing's escape hatch) in the package."""
    return sum(1 for p in paths for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
               if isinstance(node, ast.Name) and node.id == "Any")


def radon_part(paths: list[Path], root: Path) -> list[str]:
    """The five most complex functions and the five least maintainable files (radon), or why not."""
    try:
        from radon.complexity import cc_visit
        from radon.metrics import mi_rank, mi_visit
    except ImportError:
        return ["complexity  (radon is not installed: pip install radon)"]
    functions, files = [], []
    for path in paths:
        code = path.read_text(encoding="utf-8")
        rel = path.relative_to(root / "server")
        for block in cc_visit(code):
            if block.letter in "FM":
                functions.append((block.complexity, f"{rel}:{block.name}"))
        mi = mi_visit(code, multi=True)
        files.append((mi, f"{rel} ({mi_rank(mi)}, {len(code.splitlines())} lines)"))
    lines = ["worst functions  " + ", ".join(f"{name} {c}" for c, name in sorted(functions, reverse=True)[:5]),
             "least maintainable  " + ", ".join(f"{name} {mi:.0f}" for mi, name in sorted(files)[:5]),
             f"functions of complexity > 15  {sum(1 for c, _ in functions if c > 15)}",
             f"files below grade A  {sum(1 for mi, _ in files if mi < 20)}"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("checkout", nargs="?", default=str(Path(__file__).resolve().parent.parent))
    root = Path(parser.parse_args().checkout).resolve()
    found = modules(root)
    if not found:
        sys.exit(f"no {PACKAGE} package under {root}/server: give the root of a flower checkout")
    known = set(found)
    graph = {name: imports(name, path, known) for name, path in found.items()}
    edges = Counter((layer(a), layer(b)) for a, targets in graph.items() for b in targets if layer(a) != layer(b))
    paths = list(found.values())
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in paths)
    print(f"checkout   {root}")
    print(f"modules    {len(found)} in {len({layer(m) for m in found})} packages, {lines} lines")
    print(f"imports    {sum(len(t) for t in graph.values())} module edges; {len(edges)} package edges")
    loops = cycles(graph)
    print(f"cycles     {len(loops)}" + "".join(f"\n  {' ↔ '.join(c)}" for c in loops))
    print(f"Any        {any_count(paths)}")
    for line in radon_part(paths, root):
        print(line)


if __name__ == "__main__":
    main()
