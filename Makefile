# The two commands of the README: `make run` (see baton work) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: venv run test test-fast check-flows clean

venv: $(VENV)/.installed

# Exact pins from requirements.lock: a run today and next month installs the same thing.
$(VENV)/.installed: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.lock
	$(BIN)/pip install -q --no-deps --no-build-isolation -e . || $(BIN)/pip install -q --no-deps -e .
	touch $@

run: venv
	$(BIN)/baton demo

test: venv
	$(BIN)/python -m pytest

test-fast: venv
	$(BIN)/python -m pytest tests/unit tests/contract

check-flows: venv
	$(BIN)/baton check-flows flows.yaml

clean:
	rm -rf $(VENV) var .pytest_cache
