# Trellis: every user-facing target does its own set-up, so on a fresh clone
# `make run` and `make test` are the only commands needed. Set-up steps are
# stamp-based and skipped when nothing changed.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV    := .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip --disable-pip-version-check
LOCK    := requirements.lock
# Tools whose dependencies clash with the project's pins, in a virtualenv of their own (see requirements-tools.lock).
TOOLS      := .venv-tools
TOOLS_LOCK := requirements-tools.lock
HOST    ?= 127.0.0.1
PORT    ?= 8000
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k login -x"`.
PYTEST_ARGS ?=
# pytest-xdist processes for `make test` (0 = run in one process).
TEST_WORKERS ?= 2
# Override the interpreter used to create .venv: `make run PYTHON=/path/to/python3.13`.
PYTHON  ?=

FRONTEND_SOURCES := $(shell find static/src -type f 2>/dev/null)
VITE_MANIFEST    := static/dist/manifest.json

.PHONY: help setup run dev test test-postgres lint bench bench-history bench-step-cost build migrate lock clean

help:
	@echo "make run    set up everything, then serve http://$(HOST):$(PORT)/ with gunicorn and run the task worker (Ctrl-C stops both)"
	@echo "make dev    the same with Django's autoreloading development server, for changing the code"
	@echo "make test   set up everything, then run the whole test suite (incl. headless Chromium tests)"
	@echo "make test-postgres  the same suite against a private, throw-away PostgreSQL cluster (.ci/postgres.sh)"
	@echo "make lint   ruff + mypy + ESLint"
	@echo "make bench  run the benchmarks under bench/ (BENCH=\"worker_items distributed\" runs only those)"
	@echo "make bench-history  what checkpoint history costs per store (time and bytes, all vs none)"
	@echo "make bench-step-cost  engine us per node step, this tree vs commit 4416637 in alternating processes"
	@echo "make lock   rewrite $(LOCK) from the current .venv"
	@echo "make clean  remove .venv, node_modules, the Vite build and stamps"

# --- Python -----------------------------------------------------------------

# Create .venv with the first Python >= 3.12 found: $(PYTHON), python3.13,
# python3.12, python3, then any pyenv-installed 3.12+ (newest first).
$(PY):
	@set -euo pipefail; \
	ok() { "$$1" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }; \
	py=""; \
	if [ -n "$(PYTHON)" ]; then \
	  if ok "$(PYTHON)"; then py="$(PYTHON)"; \
	  else echo "error: PYTHON=$(PYTHON) is not a working Python >= 3.12" >&2; exit 1; fi; \
	fi; \
	if [ -z "$$py" ]; then \
	  for c in python3.13 python3.12 python3; do \
	    if command -v "$$c" >/dev/null 2>&1 && ok "$$c"; then py="$$c"; break; fi; \
	  done; \
	fi; \
	if [ -z "$$py" ] && command -v pyenv >/dev/null 2>&1; then \
	  root="$$(pyenv root)"; \
	  for c in $$(ls -d "$$root"/versions/3.1[2-9]*/bin/python 2>/dev/null | sort -rV); do \
	    if ok "$$c"; then py="$$c"; break; fi; \
	  done; \
	fi; \
	if [ -z "$$py" ]; then \
	  echo "error: Trellis needs Python >= 3.12 and none was found." >&2; \
	  echo "       Install one (e.g. 'pyenv install 3.13') or run 'make ... PYTHON=/path/to/python3.12'." >&2; \
	  exit 1; \
	fi; \
	echo "Creating $(VENV) with $$py ($$("$$py" -c 'import sys; print(sys.version.split()[0])'))"; \
	"$$py" -m venv $(VENV)

$(VENV)/.stamp-install: pyproject.toml $(LOCK) | $(PY)
	$(PIP) install -q -c $(LOCK) -e '.[dev]'
	@touch $@

$(VENV)/.stamp-install-bench: pyproject.toml $(LOCK) $(VENV)/.stamp-install
	$(PIP) install -q -c $(LOCK) -e '.[dev,bench]'
	@touch $@

# The API client generator the client tests run (tests/designer/test_api_clients.py).
$(TOOLS)/.stamp: $(TOOLS_LOCK) | $(PY)
	$(PY) -m venv --clear $(TOOLS)
	$(TOOLS)/bin/python -m pip --disable-pip-version-check install -q -r $(TOOLS_LOCK)
	@touch $@

lock: $(VENV)/.stamp-install-bench
	@{ echo "# Pinned versions for 'pip install -c $(LOCK)'. Regenerate with 'make lock'."; \
	   $(PIP) list --format=freeze --exclude-editable --exclude trellis --exclude pip; } > $(LOCK)
	@echo "wrote $(LOCK)"

# --- Front end ----------------------------------------------------------------

node_modules/.stamp-npm: package.json package-lock.json
	@command -v npm >/dev/null || { echo "error: npm (Node.js 20+) is required" >&2; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(VITE_MANIFEST): node_modules/.stamp-npm vite.config.js $(FRONTEND_SOURCES)
	npm run --silent build -- --logLevel warn

build: $(VITE_MANIFEST)

# --- Set-up, run, test --------------------------------------------------------

setup: $(VENV)/.stamp-install $(TOOLS)/.stamp $(VITE_MANIFEST)

migrate: setup
	$(PY) manage.py migrate --noinput

# Development settings: production's plus the demo app (its tasks, `load_demo`); see designer/settings_dev.py.
# `make run` serves with gunicorn (`manage.py serve`, designer/gunicorn_conf.py): threaded workers and a deep listen
# backlog, so a burst of callers is queued, not reset. `make dev` serves with the autoreloading development server.
# Starts the task worker and $(1) (the web server's command) in their own process groups; Ctrl-C or either one
# ending stops both.
define serve_with_worker
	@set -m; \
	$(PY) manage.py run_worker & worker=$$!; \
	$(1) & web=$$!; \
	stop() { trap - INT TERM EXIT; kill -TERM -- -$$worker -$$web 2>/dev/null || true; wait 2>/dev/null || true; }; \
	trap stop INT TERM EXIT; \
	wait -n
endef

run: export DJANGO_SETTINGS_MODULE := designer.settings_dev
run: migrate
	$(PY) manage.py load_demo
	@echo "Serving http://$(HOST):$(PORT)/ with a task worker; Ctrl-C stops both."
	$(call serve_with_worker,$(PY) manage.py serve $(HOST):$(PORT))

dev: export DJANGO_SETTINGS_MODULE := designer.settings_dev
dev: migrate
	$(PY) manage.py load_demo
	@echo "Serving http://$(HOST):$(PORT)/ (reloading on code changes) with a task worker; Ctrl-C stops both."
	$(call serve_with_worker,$(PY) manage.py runserver $(HOST):$(PORT))

# The front end's lint (ESLint), type check (TypeScript over JSDoc, tsconfig.json) and unit tests (vitest)
# first: seconds, and they name a broken module before the browser tests fail on it.
test: setup
	npm run --silent lint
	npm run --silent typecheck
	npm test --silent
	$(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# initdb's a cluster in a temporary directory on 127.0.0.1 (as an unprivileged user when run as root) and runs
# the suite with DATABASE_URL pointing at it; needs PostgreSQL's server binaries (Debian: postgresql).
test-postgres: setup
	.ci/postgres.sh $(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

lint: $(VENV)/.stamp-install node_modules/.stamp-npm
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	npm run --silent lint
	npm run --silent typecheck

bench: $(VENV)/.stamp-install-bench
	$(PY) -m bench $(BENCH)

bench-history: $(VENV)/.stamp-install-bench
	$(PY) -m bench history

# TRELLIS_BENCH_BASE=<commit> compares against another commit (TRELLIS_BENCH_ROUNDS, TRELLIS_BENCH_RUNS: how many).
bench-step-cost: $(VENV)/.stamp-install-bench
	$(PY) -m bench step_cost

clean:
	rm -rf $(VENV) $(TOOLS) node_modules static/dist *.egg-info
