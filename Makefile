# Every target bootstraps .venv when it is missing or older than pyproject.toml, so a fresh clone
# needs nothing but `make demo` or `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= dev,spark

.PHONY: demo java test lint typecheck unit bench report docs clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "bitsift needs Python 3.10 or newer; found " + sys.version.split()[0])'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	@touch $(STAMP)

# Spark needs Java 17+: `make demo` stops with install instructions when it is missing; `make test`
# only warns, and the Spark tests skip themselves with the same reason.
java: $(STAMP)
	@$(BIN)/python -m bitsift.pipeline

demo: java
	$(BIN)/python -m bitsift.demo

lint: $(STAMP)
	$(BIN)/ruff check bitsift tests benchmarks
	$(BIN)/ruff format --check bitsift tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	@$(BIN)/python -m bitsift.pipeline --warn
	$(BIN)/pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m benchmarks $(if $(FULL),--full,)

# Rewrites docs/performance.md and docs/img/*.png from benchmarks/results/ (run `make bench` first).
report: $(STAMP)
	$(BIN)/python -m benchmarks.report

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build *.egg-info
