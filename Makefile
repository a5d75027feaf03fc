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
# The suite starts hundreds of `memproc serve` processes and four pytest workers: let them
# cache compiled modules (and pytest its rewritten tests) even where the machine says not to.
TEST_ENV := env -u PYTHONDONTWRITEBYTECODE

.PHONY: serve test test-fast lint typecheck schemas bench-startup clean browser

# An editable install compiles nothing, and PYTHONDONTWRITEBYTECODE (set on some machines)
# stops Python caching what it compiles: then every `memproc serve` would compile its modules
# again at each start. compileall writes the caches once; later runs only read them.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m compileall -q src
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/memproc serve --db ./memory.db

# The viewer's browser test (tests/test_ui_browser.py) drives Debian's chromium through
# Playwright; a fresh machine (CI runs as root) does not have it yet.
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

test: $(STAMP) browser
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/memproc schema --out schemas --check
	$(BIN)/memproc models pull minilm-l6-int8 --models-dir $(TEST_MODELS)
	$(TEST_ENV) $(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# The in-process tests without the slow ones: no child processes, no lint. What CI runs is `test`.
test-fast: $(STAMP)
	$(BIN)/memproc models pull minilm-l6-int8 --models-dir $(TEST_MODELS)
	$(TEST_ENV) $(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not slow" --ignore=tests/contract

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
	rm -rf clients/typescript/node_modules clients/typescript/dist clients/typescript/src/generated.ts
