# The two entry points of the README. Each creates .venv (Python 3.11+) and installs what it
# needs from pyproject.toml, then does its work. Spark needs Java 17+ on PATH.

PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	2>/dev/null && echo $$p && break; done)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: study test bench clean

study: $(VENV)/.installed
	$(BIN)/kafkasim study

test: $(VENV)/.installed
	$(BIN)/python -m pytest

bench: $(VENV)/.installed
	$(BIN)/kafkasim bench

$(VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "kafkasim needs Python 3.11 or newer on PATH"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

clean:
	rm -rf $(VENV) runs *.egg-info
