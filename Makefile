# Entry points, each working from a clean clone on a fresh machine:
#   make run    virtual environment, install, then the app on the bundled demo data
#   make lint   the same plus test extras (ruff, mypy), then both over the project
#   make test   the same plus test extras, Chromium and PostgreSQL, then the whole suite
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export MEM0_TELEMETRY := False
export ANONYMIZED_TELEMETRY := False

.PHONY: run lint test venv install-app install-test system-deps bench

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
	$(PIP) install --quiet -e ".[all,test]"

system-deps:
	# Debian's Chromium drives the browser tests (Playwright's own download does not
	# work offline); PostgreSQL backs the shared label store tests.
	@command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium)
	# The page icons and label marks are emoji: without this font the README's
	# screenshots (taken by the browser tests) show empty boxes.
	@test -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf || (apt-get update -q && apt-get install -y -q fonts-noto-color-emoji)
	@test -x /usr/lib/postgresql/15/bin/initdb || (apt-get update -q && apt-get install -y -q postgresql-15)

run: install-app
	$(VENV)/bin/streamlit run dashboard/app.py --server.headless true --browser.gatherUsageStats false

# ruff and mypy read their settings (rules, files, strictness) from pyproject.toml.
lint: install-test
	$(PY) -m ruff check .
	$(PY) -m mypy

test: install-test system-deps
	$(PY) -m pytest

bench: install-test
	$(PY) -m benchmarks
