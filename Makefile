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

.PHONY: run lint test test-lowest venv install-app install-test system-deps phoenix-server bench

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# The CPU build of torch that lies on this machine's disk, before anything that
	# depends on torch: a bare `torch` requirement resolves to a multi-GB CUDA build.
	$(PIP) install --quiet torch==2.13.0

venv: $(PY)

install-app: venv
	$(PIP) install --quiet -e .
	# The model's ONNX export (once per model, in ~/.cache/memlens/models): the
	# app's first query then loads in under a second instead of importing torch.
	$(PY) -m connectors.embedding.onnx_export

install-test: venv
	$(PIP) install --quiet -e ".[all,test,spark]"
	# The model server is built from source. No cache for it: a wheel built on an
	# earlier machine could hide that a fresh build of the pinned version crashes.
	$(PIP) install --quiet --no-cache-dir -e ".[model-server]"

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
PHOENIX_VENV ?= .venv-phoenix
$(PHOENIX_VENV)/bin/phoenix:
	@start=$$(date +%s) && python3 -m venv $(PHOENIX_VENV) \
		&& $(PHOENIX_VENV)/bin/python -m pip install --quiet --upgrade pip \
		&& $(PHOENIX_VENV)/bin/python -m pip install --quiet arize-phoenix==20.26.1 \
		&& echo "phoenix-server: arize-phoenix installed in $(PHOENIX_VENV) in $$(( $$(date +%s) - start )) s"

phoenix-server: $(PHOENIX_VENV)/bin/phoenix

run: install-app
	$(VENV)/bin/streamlit run dashboard/app.py --server.headless true --browser.gatherUsageStats false

# ruff and mypy read their settings (rules, files, strictness) from pyproject.toml.
lint: install-test
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
LOWEST_EXTRAS := lancedb,postgres,parquet,qdrant
# The pages but those that start Mem0, Chroma or Qdrant servers or open Chroma folders
# (the store names), calibration, labels (SQLite and PostgreSQL), the embedded store, and
# the log readers (DuckDB's path and the validating reader must give the same frames on
# the oldest pyarrow and pandas too).
LOWEST_TESTS := tests/ui tests/dashboard/calibration tests/dashboard/labels tests/connectors/test_embedded.py \
	tests/connectors/test_embedding.py tests/dashboard/logs/test_columnar.py tests/dashboard/logs/test_logs.py \
	tests/dashboard/logs/test_empty_turns.py tests/dashboard/logs/test_streamed.py \
	--ignore=tests/ui/test_store_pages.py --ignore=tests/ui/test_mem0_history_page.py --ignore=tests/ui/test_store_names.py

test-lowest: system-deps
	test -x $(LOWEST_PY) || python3 -m venv $(LOWEST_VENV)
	$(LOWEST_PY) -m pip install --quiet --upgrade pip
	$(LOWEST_PY) -m pip install --quiet torch==2.13.0
	python3 .ci/lowest_constraints.py $(LOWEST_EXTRAS) > $(LOWEST_VENV)/lowest.txt
	$(LOWEST_PY) -m pip install --quiet -c $(LOWEST_VENV)/lowest.txt -e ".[$(LOWEST_EXTRAS),test]"
	$(LOWEST_PY) -m pip list --format=freeze | grep -iE "^($$(cut -d= -f1 $(LOWEST_VENV)/lowest.txt | paste -sd'|'))=="
	$(LOWEST_PY) -m pytest -p no:cacheprovider $(LOWEST_TESTS)

bench: install-test
	$(PY) -m benchmarks
