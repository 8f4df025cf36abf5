# Two commands set everything up: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8501
export SPECDASH_DB_URL ?= sqlite:///specdash.db

.PHONY: run test test-fast install lint docs bench clean

$(BIN)/python:
	@$(PYTHON) -c "import sys; sys.exit(sys.version_info < (3, 11))" || { echo "specdash needs Python >= 3.11 (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the project's metadata changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/specdash init
	$(BIN)/specdash demo --if-empty
	$(BIN)/specdash serve --port $(PORT)

# What CI runs: lint, the manual, then the whole suite (warnings from specdash's own code are errors, see pyproject).
# --dist loadfile runs each test file on one worker, so a module's fixtures are built once (the browser tests
# share one served app); tests/conftest.py puts the browser tests first and the other slow tests next, an
# order --no-loadscope-reorder keeps, so that no long test forms the tail.
test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict --quiet
	$(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The inner loop: lint, then the suite without its slow, browser and PostgreSQL tests (CONTRIBUTING.md).
test-fast: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder -m "not slow and not browser and not postgres and not hostile" $(PYTEST_ARGS)

# The manual (docs/, mkdocs.yml) into build/site/; a broken link, anchor or image is an error.
docs: install
	$(BIN)/mkdocs build --strict --quiet

bench: install
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench $(BENCH_ARGS)

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info
