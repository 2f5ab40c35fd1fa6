# The README's two commands: `make demo` and `make test`. Each bootstraps .venv from
# requirements.lock on a machine that has only python3 (3.11), then runs.
PYTHON ?= python3
VENV   := .venv
UV_VERSION := 0.13.8
STAMP  := $(VENV)/.installed

export UV_PYTHON_DOWNLOADS := never
export UV_COMPILE_BYTECODE := 1
export UV_LINK_MODE := copy

.PHONY: demo test lint venv lock stack browser

venv: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet "uv==$(UV_VERSION)"
	$(VENV)/bin/uv pip sync --quiet --python $(VENV)/bin/python requirements.lock
	$(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/kitab demo

# two test processes (pytest-xdist), each test file whole in one of them (its module fixtures
# built once); a single test or file: .venv/bin/python -m pytest tests/FILE.py
test: $(STAMP)
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadfile

# The HTML report's tests open it in a real headless browser: Debian's chromium (its own
# --headless --dump-dom; no driver). Installs it when missing (needs root, as in CI);
# tests/test_report_html.py fails without it when CI is set and skips with this hint otherwise.
browser:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

# ruff's lint and format check (configured in pyproject.toml); .ci/run runs it first
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# docker-compose.yml's topology from plain processes (Postgres, Prefect server, mirror,
# worker): one run of the scheduled refresh to completion, then all of it stops.
stack: $(STAMP)
	scripts/stack run-once

# Re-pin after editing pyproject.toml (plain name==version pins, no URLs).
lock:
	$(VENV)/bin/uv pip compile pyproject.toml --group dev --python-version 3.11 --no-header -o requirements.lock
