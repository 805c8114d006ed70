# Two entry points for a fresh Linux machine with Python >= 3.11 and make:
#   make train   set up .venv if missing, then run LambdaMART on the built-in synthetic data
#   make test    set up the same .venv, then run the test suite (fast tests; make test-all adds slow ones)
# The environment is installed from uv.lock (exact versions); uv itself is bootstrapped into .tools/;
# then ltr's numba kernels are compiled into numba's cache (python -m ltr.warmup), once per install.
PYTHON ?= python3
UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
STAMP := $(VENV)/.ltr-synced
PYTEST_ARGS ?=
# the suite runs on 2 xdist workers, a test file per worker at a time (module fixtures built once)
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadfile

export MLFLOW_DISABLE_TELEMETRY := true
export UV_PYTHON_DOWNLOADS := never
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: env train test test-all lint constraints clean-env

env: $(STAMP)

$(UV):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "ltr needs Python >= 3.11, found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(STAMP): uv.lock pyproject.toml | $(UV)
	@echo "ltr: installing the locked dependencies into $(VENV) and compiling their bytecode (1-3 min the first time) ..."
	UV_PYTHON=$(PYTHON) $(UV) sync --frozen --compile-bytecode
	@echo "ltr: compiling ltr's numba kernels once (about 40 s) ..."
	$(VENV)/bin/python -m ltr.warmup --jobs 2 parse metrics float64
	@touch $@

train: $(STAMP)
	$(VENV)/bin/python -m ltr.train +model=lambdamart

test: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not slow" $(XDIST) $(PYTEST_ARGS)

test-all: $(STAMP)
	$(VENV)/bin/python -m pytest $(XDIST) $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check ltr tests benchmarks
	$(VENV)/bin/ruff format --check ltr tests benchmarks

# constraints.txt: uv.lock's runtime versions (every extra) for plain pip: pip install . -c constraints.txt
EXPORT_FLAGS := --frozen --no-hashes --no-dev --all-extras --no-emit-project
constraints: $(UV)
	$(UV) export $(EXPORT_FLAGS) --output-file constraints.txt >/dev/null

clean-env:
	rm -rf $(VENV) $(TOOLS)
