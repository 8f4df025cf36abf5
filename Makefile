# Two commands set everything up: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8501
export SPECDASH_DB_URL ?= sqlite:///specdash.db

.PHONY: run test install lint docs bench clean

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
test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict --quiet
	$(BIN)/python -m pytest -n auto

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
