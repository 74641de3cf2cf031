# Entry points, each working from a clean clone on a fresh machine:
#   make run    virtual environment, install, then the app on the bundled demo data
#   make lint   the same plus test extras (ruff, mypy), then both over the project
#   make test   the same plus test extras, Chromium and PostgreSQL, then the whole suite
#   make test-lowest  a second environment with every direct dependency at the lowest
#               version pyproject.toml allows, then the pages, the CLI and the
#               connectors that need no server
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export MEM0_TELEMETRY := False
export ANONYMIZED_TELEMETRY := False

.PHONY: run lint test test-lowest venv install-app install-dev install-test install-lowest system-deps phoenix-server bench

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# The CPU build of torch that lies on this machine's disk, before anything that
	# depends on torch: a bare `torch` requirement resolves to a multi-GB CUDA build.
	$(PIP) install --quiet torch==2.13.0

venv: $(PY)

install-app: venv
	$(PIP) install --quiet -e ".[app]"
	# The model's ONNX export (once per model, in ~/.cache/memlens/models): the
	# app's first query then loads in under a second instead of importing torch.
	$(PY) -m connectors.embedding.onnx_export

# The real local model server (llama-cpp-python) is built from source: about 12 minutes
# on two cores. The pinned version is built once per machine into a wheelhouse outside
# the checkout and installed from there; pip still resolves every other requirement as
# usual, so a missing install step still fails. A fresh build of the pin is proven by
# `make llama-fresh-build`, not on every CI run.
LLAMA_PIN := $(shell python3 -c "import tomllib; print(next(r for r in tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['model-server'] if r.startswith('llama')))")
LLAMA_VERSION := $(lastword $(subst ==, ,$(LLAMA_PIN)))
WHEELHOUSE ?= $(HOME)/.cache/memlens/wheels
LLAMA_WHEEL_STAMP := $(WHEELHOUSE)/llama-cpp-python-$(LLAMA_VERSION).built

$(LLAMA_WHEEL_STAMP):
	@mkdir -p $(WHEELHOUSE)
	@start=$$(date +%s) && python3 -m pip wheel --quiet --no-deps -w $(WHEELHOUSE) "llama-cpp-python==$(LLAMA_VERSION)" \
		&& touch $@ && echo "llama-wheel: llama-cpp-python $(LLAMA_VERSION) built in $$(( $$(date +%s) - start )) s" >&2

.PHONY: llama-wheel llama-fresh-build
llama-wheel: $(LLAMA_WHEEL_STAMP)

# Run when the pin in pyproject.toml's model-server extra moves (not in CI): the pinned
# version built from an empty cache into a throwaway environment, then the judging
# tests that drive the real server, on that build. (0.3.36, built fresh on this kind of
# machine, crashed on its first decode; 0.3.16 answers.)
FRESH_BUILD ?= /tmp/memlens-llama-fresh
llama-fresh-build: install-test
	rm -rf $(FRESH_BUILD)
	$(PIP) install --quiet --no-cache-dir --no-deps --target $(FRESH_BUILD) "llama-cpp-python==$(LLAMA_VERSION)"
	PYTHONPATH=$(FRESH_BUILD) $(PY) -c "import llama_cpp; print('llama-fresh-build: testing', llama_cpp.__version__, 'from', llama_cpp.__file__)"
	PYTHONPATH=$(FRESH_BUILD) $(PY) -m pytest tests/dashboard/judging/test_llama_server.py tests/dashboard/evaluation/test_write_audit_llama.py

# Everything but the model server: what lint needs, so lint need not wait on its build.
# Each install runs again only when pyproject.toml changes (the stamp is written after it).
install-dev: $(VENV)/.installed-dev
$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PIP) install --quiet -e ".[all,test,spark]"
	touch $@

install-test: $(VENV)/.installed-test
$(VENV)/.installed-test: $(VENV)/.installed-dev $(LLAMA_WHEEL_STAMP)
	$(PIP) install --quiet --find-links $(WHEELHOUSE) -e ".[model-server]"
	touch $@

system-deps:
	# Debian's Chromium drives the browser tests (Playwright's own download does not
	# work offline); PostgreSQL backs the shared label store tests.
	@command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium)
	# The page icons and label marks are emoji: without this font the README's
	# screenshots (taken by the browser tests) show empty boxes.
	@test -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf || (apt-get update -q && apt-get install -y -q fonts-noto-color-emoji)
	@test -x /usr/lib/postgresql/15/bin/initdb || (apt-get update -q && apt-get install -y -q postgresql-15)
	# A Java runtime for PySpark in local mode (the monitor's query on Spark)
	@command -v java >/dev/null || (apt-get update -q && apt-get install -y -q openjdk-17-jre-headless)

# The Arize Phoenix server the Phoenix tests start (`phoenix serve`): about 860 MB
# with pins of its own, so it gets a virtual environment of its own and cannot move
# the project's packages; memlens itself uses only the light client (memlens[phoenix]).
# It is a test fixture at a pinned version, so it is installed once per machine and
# version, outside the checkout (the stamp is written only after a whole install), and
# a fresh machine installs it with the same rule.
PHOENIX_VERSION := 20.26.1
PHOENIX_VENV ?= $(HOME)/.cache/memlens/phoenix-$(PHOENIX_VERSION)
export MEMLENS_PHOENIX_VENV := $(PHOENIX_VENV)
$(PHOENIX_VENV)/.installed:
	@start=$$(date +%s) && rm -rf $(PHOENIX_VENV) && python3 -m venv $(PHOENIX_VENV) \
		&& $(PHOENIX_VENV)/bin/python -m pip install --quiet --upgrade pip \
		&& $(PHOENIX_VENV)/bin/python -m pip install --quiet arize-phoenix==$(PHOENIX_VERSION) \
		&& touch $@ && echo "phoenix-server: arize-phoenix installed in $(PHOENIX_VENV) in $$(( $$(date +%s) - start )) s" >&2

phoenix-server: $(PHOENIX_VENV)/.installed

# The app shows memory text: it listens on this machine only unless told otherwise
# (`make run ADDRESS=0.0.0.0` serves a team; see docs/deploying.md for the gate).
ADDRESS ?= 127.0.0.1
PORT ?= 8501
run: install-app
	$(VENV)/bin/streamlit run dashboard/app.py --server.headless true --browser.gatherUsageStats false \
		--server.address $(ADDRESS) --server.port $(PORT)

# ruff and mypy read their settings (rules, files, strictness) from pyproject.toml.
lint: install-dev
	$(PY) -m ruff check .
	$(PY) -m mypy

# Two processes (pytest-xdist), each test file whole in one of them so a file's servers
# start once: most of the suite waits on servers, the model and the browser rather than
# on a core, and one process left a two-core machine a third idle.
TEST_WORKERS ?= 2
test: install-test system-deps phoenix-server
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

# The browser tests write screenshots to tests/e2e/artifacts/screenshots (ignored by
# git); this runs them and copies the shots over the committed ones in docs/screenshots.
.PHONY: screenshots
screenshots: install-test system-deps
	MEMLENS_UPDATE_SCREENSHOTS=1 $(PY) -m pytest tests/e2e -m e2e

# Lower bounds that hold: pip installs each direct dependency at the lowest version
# pyproject.toml allows (.ci/lowest_constraints.py writes the pins), everything else
# as it resolves today, and the part of the suite that needs no server beyond
# PostgreSQL runs against them.
LOWEST_VENV ?= .venv-lowest
LOWEST_PY := $(LOWEST_VENV)/bin/python
LOWEST_EXTRAS := app,lancedb,postgres,parquet,qdrant
# The pages but those that start Mem0, Chroma or Qdrant servers or open Chroma folders
# (the store names), calibration, labels (SQLite and PostgreSQL), the embedded store, and
# the log readers (DuckDB's path and the validating reader must give the same frames on
# the oldest pyarrow and pandas too).
LOWEST_TESTS := tests/ui tests/dashboard/calibration tests/dashboard/labels tests/connectors/test_embedded.py \
	tests/connectors/test_embedding.py tests/dashboard/logs/test_columnar.py tests/dashboard/logs/test_logs.py \
	tests/dashboard/logs/test_empty_turns.py tests/dashboard/logs/test_streamed.py \
	--ignore=tests/ui/test_store_pages.py --ignore=tests/ui/test_mem0_history_page.py --ignore=tests/ui/test_store_names.py

install-lowest: $(LOWEST_VENV)/.installed
$(LOWEST_VENV)/.installed: pyproject.toml .ci/lowest_constraints.py
	test -x $(LOWEST_PY) || python3 -m venv $(LOWEST_VENV)
	$(LOWEST_PY) -m pip install --quiet --upgrade pip
	$(LOWEST_PY) -m pip install --quiet torch==2.13.0
	python3 .ci/lowest_constraints.py $(LOWEST_EXTRAS) > $(LOWEST_VENV)/lowest.txt
	$(LOWEST_PY) -m pip install --quiet -c $(LOWEST_VENV)/lowest.txt -e ".[$(LOWEST_EXTRAS),test]"
	$(LOWEST_PY) -m pip list --format=freeze | grep -iE "^($$(cut -d= -f1 $(LOWEST_VENV)/lowest.txt | paste -sd'|'))=="
	touch $@

test-lowest: install-lowest system-deps
	$(LOWEST_PY) -m pytest -p no:cacheprovider $(LOWEST_TESTS)

bench: install-test
	$(PY) -m benchmarks
