"""Functions longer than a limit: `python scripts/long_functions.py [--limit 80] DIR ...`; exit 1 if any.

A function should read as a table of contents; the house rule for the engine and the daemon is 80 lines at
most, decorators and docstring included.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path


def lengths(root: Path) -> list[tuple[int, str]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                assert node.end_lineno is not None
                found.append((node.end_lineno - start + 1, f"{path}:{node.lineno} {node.name}"))
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args()
    found = sorted((item for d in args.dirs for item in lengths(d)), reverse=True)
    over = [(n, where) for n, where in found if n > args.limit]
    longest = f"; longest {found[0][0]} lines ({found[0][1]})" if found else ""
    print(f"{len(found)} functions, {len(over)} over {args.limit} lines{longest}")
    for n, where in over:
        print(f"  {n:4d}  {where}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
