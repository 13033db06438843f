"""Import circles inside a package: `python scripts/import_circles.py [reassignd]`; exit 1 if any.

Every import counts, wherever it stands (module level, inside a function, under TYPE_CHECKING): a circle
that only type checking or a late import hides is still two modules that cannot be understood apart.
`from a.b import c` is an edge to the module a.b.c when there is one, else to a.b; importing a module does
not count as importing its parent packages (their faces, __init__.py, hand names on).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                child = f"{base}.{alias.name}"
                if child in known:
                    yield child
                elif base in known:
                    yield base


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), and modules importing themselves."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "reassignd").resolve()
    known = modules(root)
    graph = {name: set(imports(name, path, known)) for name, path in known.items()}
    found = circles(graph)
    edges = sum(len(targets) for targets in graph.values())
    print(f"{len(known)} modules, {edges} imports, {len(found)} circle(s)")
    for component in found:
        print("circle:", " -> ".join(component))
        for module in component:
            inside = sorted(graph[module] & set(component))
            print(f"  {module} imports {', '.join(inside)}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
