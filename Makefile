# linxling — two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all demo test test-slow test-all bench system-deps venv clean lint docs

all: test

# System libraries: SuiteSparse headers for scikit-sparse (CHOLMOD).
system-deps:
	@if [ ! -f /usr/include/suitesparse/cholmod.h ]; then \
	  echo ">> installing libsuitesparse-dev (apt)"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libsuitesparse-dev >/dev/null; \
	fi

$(STAMP): pyproject.toml | system-deps
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	# the cholmod extra: scikit-sparse<0.5 builds from source against Debian's SuiteSparse and needs
	# numpy+Cython at build time (so it is installed here, not through pip's isolated build)
	$(PY) -m pip install -q numpy "Cython<3.1"
	$(PY) -m pip install -q --no-build-isolation "scikit-sparse<0.5"
	# editable_mode=compat: a path entry in a .pth file, not an import hook, so that type checkers
	# (mypy) and editors resolve linxling to this checkout (tests/test_typing.py)
	$(PY) -m pip install -q -e ".[dask,demo,test,bench,docs]" --config-settings editable_mode=compat
	# compile and cache every model's numba kernels now, not at the first fit (2-3 minutes on 2 cores)
	$(VENV)/bin/linxling warmup
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/linxling demo

# Lint (ruff) and type-check the public API (mypy); both configured in pyproject.toml.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

# The documentation site (mkdocs + mkdocstrings), warnings as errors; output in site/.
docs: $(STAMP)
	$(PY) -m mkdocs build --strict --site-dir site

# Tests, all in CI: lint and the docs site, the fast tests, then the end-to-end ones marked `slow`
# (pytest exits 5 when a pass collects nothing; that is not a failure here).
# The fast suite runs twice: on this CPU's own OpenBLAS kernels, then under Prescott (a generic
# x86-64 kernel every CPU runs), so a tolerance that holds only for one CPU's rounding fails here
# and not on the next user's machine.
test: lint docs
	$(PY) -m pytest -q -m "not slow"
	OPENBLAS_CORETYPE=Prescott $(PY) -m pytest -q -m "not slow" -p no:cacheprovider
	$(PY) -m pytest -q -m slow || [ $$? -eq 5 ]

test-all: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache
