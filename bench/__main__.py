"""`python -m bench [--quick] [NAME ...]`: run every bench/bench_*.py and write bench/results/NAME.json.

Benchmarks print figures; they never fail on a slow machine. A module may raise AssertionError when a
correctness property breaks (limits exceeded, final assignment wrong): that does fail the run.
After the modules, bench/report.py turns the results into Markdown tables and PNG charts (full runs only;
a quick run prints the table).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import platform
import sys
import time
from pathlib import Path

from bench import report

RESULTS = Path(__file__).parent / "results"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI (under 5 minutes)")
    parser.add_argument("names", nargs="*", help="only these benchmarks (e.g. engine sim)")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    machine = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "cpu": _cpu_model(),
        "date": time.strftime("%Y-%m-%d"),
        "time_utc": time.strftime("%H:%M", time.gmtime()),
    }
    failed = False
    modules = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]))
    for name in modules:
        if not name.startswith("bench_") or (args.names and name.removeprefix("bench_") not in args.names):
            continue
        print(f"== {name} ({'quick' if args.quick else 'full'})", flush=True)
        module = importlib.import_module(f"bench.{name}")
        try:
            figures = module.run(quick=args.quick)
        except AssertionError as exc:
            print(f"!! {name}: correctness property broken: {exc}", file=sys.stderr)
            failed = True
            continue
        out = RESULTS / f"{name.removeprefix('bench_')}{'-quick' if args.quick else ''}.json"
        out.write_text(json.dumps({"machine": machine, "quick": args.quick, "figures": figures}, indent=2))
        print(f"   wrote {out}", flush=True)
    if not args.names or "strategies" in args.names or "report" in args.names:
        print("== report", flush=True)
        for path in report.write(quick=args.quick):
            print(f"   wrote {path}", flush=True)
    return 1 if failed else 0


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
