# gpfit: `make run` (demo on the DirectRunner) and `make test` (whole suite).
# Everything is installed from setup.py into .venv, so a fresh machine needs
# only Python 3.11 and network access to PyPI.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python

# Small matrices and oversubscribed thread pools are slow (DESIGN.md, Measured).
export OPENBLAS_NUM_THREADS ?= 1
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: run test bench dataflow-dry-run clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# One stamp per extras set; each is redone when setup.py changes.
$(VENV)/.installed-run: setup.py | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: setup.py | $(PY)
	$(PY) -m pip install --quiet -e ".[test,report]"
	$(PY) -m pip check
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(PY) -m pipeline.demo

test: $(VENV)/.installed-test
	$(PY) -m pytest -q tests

clean:
	rm -rf $(VENV) demo/data demo/output build dist *.egg-info
