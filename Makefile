# One task runner. `make serve` and `make test` work on a fresh clone: they build .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The tests run real inference with MiniLM, fetched once into this cache (tests/conftest.py).
TEST_MODELS := .cache/models
# pytest-xdist workers. Most of the suite waits on child processes and pipes rather than the
# CPU, so more workers than cores still pay on a 2-core machine.
TEST_WORKERS ?= 4

.PHONY: serve test test-fast lint typecheck schemas bench-startup clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/memproc serve --db ./memory.db

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/memproc schema --out schemas --check
	$(BIN)/memproc models pull minilm-l6-int8 --models-dir $(TEST_MODELS)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# The in-process tests without the slow ones: no child processes, no lint. What CI runs is `test`.
test-fast: $(STAMP)
	$(BIN)/memproc models pull minilm-l6-int8 --models-dir $(TEST_MODELS)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not slow" --ignore=tests/contract

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

schemas: $(STAMP)
	$(BIN)/memproc schema --out schemas

bench-startup: $(STAMP)
	$(BIN)/python benchmarks/startup.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
