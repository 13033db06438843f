# The two commands a new user needs: `make demo` and `make test`. Everything else is for developers.
VENV := .venv
PY := $(VENV)/bin/python
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON ?= $(abspath $(PY))

.PHONY: setup demo demo-kafka test check lint format typecheck structure pytest bench bench-quick clean

setup:
	@scripts/setup.sh

demo: setup
	$(PY) -m reassignd demo

# The demo on a real Apache Kafka cluster on loopback (Java 17; the jars `make setup` fetched).
demo-kafka: setup
	$(PY) -m reassignd demo --kafka

test: setup check pytest

check: setup lint typecheck structure

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

typecheck:
	$(VENV)/bin/mypy reassignd

# No import circle inside the package; no function over 80 lines in the engine and the daemon; every test
# module imports (the real-Kafka ones too, which a machine without Kafka's jars would only skip).
structure:
	$(PY) scripts/import_circles.py reassignd
	$(PY) scripts/long_functions.py --limit 80 reassignd/engine reassignd/daemon
	@lines=$$(wc -l < reassignd/daemon/controller.py); [ $$lines -lt 400 ] || \
		{ echo "reassignd/daemon/controller.py: $$lines lines, over issue 26's 400: give a part its own module"; exit 1; }
	@out=$$($(VENV)/bin/pytest --collect-only -q -n 0 2>&1) || { echo "$$out" | tail -n 40; exit 1; }; \
	echo "$$out" | tail -n 1

pytest:
	$(VENV)/bin/pytest

bench: setup
	$(PY) -m bench

bench-quick: setup
	$(PY) -m bench --quick

clean:
	rm -rf build .mypy_cache .ruff_cache .pytest_cache
