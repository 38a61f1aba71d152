# MirrorBench: the project's vocabulary. `make run` and `make test` are all a new machine needs.
# The interpreter the virtual environment is made from: the system's own Python 3.11 where there
# is one (Debian's is built with profile-guided and link-time optimisation; the suite's Python
# work, its own and that of the servers and workers it starts, takes about a tenth less CPU on
# it than on a default source build such as pyenv's) when it can make one (Debian's
# python3.11-venv), else python3.11 on the PATH. A .venv made before keeps its interpreter:
# remove it to make it again.
SYSTEM_PYTHON := /usr/bin/python3.11
PYTHON ?= $(shell $(SYSTEM_PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 \
	&& echo $(SYSTEM_PYTHON) || echo python3.11)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Every Python package with its hashes (`make lock` refreshes it; scripts/lock.sh says what it holds).
LOCK := requirements.lock
# every-eval-ever, whose validator the tests run on the Every Eval Ever exports: installed after
# the lock without its declared dependencies (requirements-eee.txt and docs/exports.md say why).
EEE := requirements-eee.txt
DATA_DIR ?= $(or $(MIRRORBENCH_DATA_DIR),var)
SIZE ?= 512
# Headless rendering: EGL first (Mesa's software driver), OSMesa as the fallback.
export MUJOCO_GL ?= egl
export PYOPENGL_PLATFORM ?= $(MUJOCO_GL)

.PHONY: install lock plotly-bundle system-deps test-deps run worker test test-fast bench lint format typecheck migrations-check gallery clean

install: $(STAMP)

# The lock's exact files (hashes checked, wheels only), then every-eval-ever's wheel alone
# ($(EEE)), then the project alone, built by the locked setuptools. The distribution was
# called mirrorbench before (an unrelated project's name on the public index): a .venv made
# then drops it before the project goes in, not after, when the uninstall would take the
# `mirrorbench` command both install.
$(STAMP): pyproject.toml $(LOCK) $(EEE)
	@$(MAKE) --no-print-directory system-deps
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes --only-binary :all: -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --ignore-requires-python --require-hashes \
		--only-binary :all: -r $(EEE)
	@! $(BIN)/python -m pip show --quiet mirrorbench 2>/dev/null \
		|| $(BIN)/python -m pip uninstall --quiet --yes mirrorbench
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $(STAMP)

# Resolve $(LOCK) again from pyproject.toml, keeping the pins it still allows; UPGRADE=1 moves
# every pin to the newest release allowed. Then `make install` installs the new lock.
lock:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	VENV=$(VENV) LOCK=$(LOCK) bash scripts/lock.sh

# Build the chart pages' plotly.js (static/vendor/plotly.min.js, committed) again from
# scripts/plotly's npm lock and trace list, and its styles (static/css/plotly.css): after a
# plotly upgrade in the lock, or a chart that draws a new trace type. Needs node and npm;
# `bash scripts/plotly-bundle.sh --check` only compares.
plotly-bundle: install
	BIN=$(BIN) bash scripts/plotly-bundle.sh

# Mesa's EGL and OSMesa libraries, installed when missing and we may (root or sudo).
system-deps:
	@bash scripts/system-deps.sh

HOST ?= 127.0.0.1
PORT ?= 8000
WORKER_CONCURRENCY ?= 4

run: install
	$(BIN)/python manage.py prepare_data_dir
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_reference_results
	$(BIN)/python manage.py render_frames --gallery --queue
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT) --concurrency $(WORKER_CONCURRENCY)

# One worker in the foreground on both queues, with the stale-episode check (beat) embedded.
worker: install
	$(BIN)/python manage.py worker --concurrency $(WORKER_CONCURRENCY)

# The suite runs against a throwaway data directory, never var/, removed however pytest ends
# (pass, fail, Ctrl-C). It is spread over the cores (pytest-xdist, two workers more than the
# cores, each with a data directory of its own: tests/xdist_workers.py says why); tests marked
# with one xdist_group share a worker: the browser's, those sharing a class's or module's rows
# (tests/conftest.py), the Inspect AI tests and those that load the model SDKs (`sdk`: only
# one worker imports them; no test module does when collected); the groups are dealt out first,
# the largest first, and the tests marked `waits` (they mostly wait on the processes they start)
# are spread over the whole run, among the groups too. JOBS=1 runs it in one process
# (a debugger, a bisect);
# PYTEST_ARGS adds options.
JOBS ?= auto
XDIST = $(if $(filter 1,$(JOBS)),-p no:xdist,-n $(JOBS) --dist loadgroup)
# Bytecode is written (PYTHONDONTWRITEBYTECODE emptied): otherwise each of the suite's Python
# processes (xdist workers, the web servers and workers tests start) compiles every project
# module, and pytest rewrites every test module's asserts, again (about 10 s CPU a worker).
test: install test-deps
	@data=$$(mktemp -d); trap 'rm -rf "$$data"' EXIT; \
	PYTHONDONTWRITEBYTECODE= MIRRORBENCH_DATA_DIR=$$data $(BIN)/python -m pytest -q $(XDIST) $(PYTEST_ARGS)

test-deps:
	@bash scripts/test-deps.sh

test-fast: install
	@data=$$(mktemp -d); trap 'rm -rf "$$data"' EXIT; \
	PYTHONDONTWRITEBYTECODE= MIRRORBENCH_DATA_DIR=$$data $(BIN)/python -m pytest -q $(XDIST) -m "not slow" $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m benchmarks.render
	$(BIN)/python -m benchmarks.usd
	$(BIN)/python -m benchmarks.frames
	$(BIN)/python -m benchmarks.submissions
	$(BIN)/python -m benchmarks.engine
	$(BIN)/python -m benchmarks.leaderboard
	$(BIN)/python -m benchmarks.charts
	$(BIN)/python -m benchmarks.load
	$(BIN)/python -m benchmarks.play
	$(BIN)/python -m benchmarks.throughput
	$(BIN)/python -m benchmarks.worker
	$(BIN)/python -m benchmarks.verify_limits
	$(BIN)/python -m benchmarks.reply_limits
	$(BIN)/python -m benchmarks.search

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: install
	$(BIN)/mypy

# Against a throwaway data directory, like the suite: a fresh clone has no var/.
migrations-check: install
	@data=$$(mktemp -d); trap 'rm -rf "$$data"' EXIT; \
	MIRRORBENCH_DATA_DIR=$$data $(BIN)/python manage.py makemigrations --check --dry-run

# Isaac Sim renders one scene; needs an RTX GPU and Python 3.12 (exit 77: skipped, says why).
.PHONY: isaac-smoke
isaac-smoke:
	bash scripts/isaac-smoke.sh

gallery: install
	$(BIN)/mirrorbench gallery --out $(DATA_DIR)/gallery --size $(SIZE)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
