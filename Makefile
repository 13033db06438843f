# The two commands a new user needs: `make demo` and `make test`. Everything else is for developers.
VENV := .venv
PY := $(VENV)/bin/python
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON ?= $(abspath $(PY))

.PHONY: setup demo test check lint format typecheck pytest bench bench-quick clean

setup:
	@scripts/setup.sh

demo: setup
	$(PY) -m reassignd demo

test: setup check pytest

check: setup lint typecheck

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

typecheck:
	$(VENV)/bin/mypy reassignd

pytest:
	$(VENV)/bin/pytest

bench: setup
	$(PY) -m bench

bench-quick: setup
	$(PY) -m bench --quick

clean:
	rm -rf build .mypy_cache .ruff_cache .pytest_cache
