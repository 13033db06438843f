"""Benchmarks: each `bench_*.py` module has `run(quick: bool) -> dict` and prints its own figures."""
