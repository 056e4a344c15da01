# spyre-ci: every target works from a clean clone; `make test` installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.spyre-ci-installed
PYTEST_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help setup sysdeps run test lint typecheck check bench bench-mutations serve e2e clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

setup: $(STAMP) ## create .venv and install spyre-ci with all extras (torch==2.13.0 CPU)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[backend,postgres,dev]'
	touch $(STAMP)

sysdeps: ## install the Debian packages the tests use (PostgreSQL, Chromium) if missing
	bash scripts/install-system-deps.sh

run: setup ## the main job: select the tests an upgrade from PyTorch 2.13 to 2.14 must run
	$(BIN)/spyre-ci select --from 2.13 --to 2.14

test: setup sysdeps ## run the whole test suite (a run that collects nothing fails)
	SPYRE_CI_PYTORCH_SRC="$${SPYRE_CI_PYTORCH_SRC-$$(bash scripts/fetch-pytorch-src.sh)}" \
		$(BIN)/pytest $(PYTEST_ARGS)

lint: setup ## ruff
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup ## mypy
	$(BIN)/mypy

check: lint typecheck test ## lint, typecheck and test, as CI does

bench: setup ## run the benchmarks under bench/ and print their figures
	$(BIN)/python bench/run_all.py

MUTATION_ARGS ?=
bench-mutations: setup ## recall by mutation of torch 2.13.0, in full (make bench runs it --quick)
	$(BIN)/python bench/bench_mutations.py $(MUTATION_ARGS)

RELAY_CONFIG ?= $(if $(wildcard relay.yaml),relay.yaml,relay/example.yaml)
RELAY_PORT   ?= 8080
serve: setup ## run the relay (web + worker + local target) on 127.0.0.1:8080 with relay.yaml, else relay/example.yaml
	mkdir -p .relay
	$(BIN)/spyre-ci ci demo --dir .relay/demo
	$(BIN)/spyre-ci relay serve --with-worker --config $(RELAY_CONFIG) --port $(RELAY_PORT)

e2e: setup ## the whole loop end to end: real relay, fake GitHub running the workflow, fake OIDC
	$(BIN)/pytest tests/e2e -m e2e -p no:cacheprovider $(PYTEST_ARGS)

clean: ## remove the virtual environment and caches (not ~/.cache/spyre-ci)
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
