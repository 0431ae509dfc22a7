# The two entry points of the README. Each creates .venv (Python 3.11+) and installs what it
# needs from pyproject.toml, then does its work. Spark needs Java 17+ on PATH.

PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	2>/dev/null && echo $$p && break; done)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: study test bench clean zookeeper chromium

study: $(VENV)/.installed
	$(BIN)/kafkasim study

test: $(VENV)/.installed zookeeper chromium
	$(BIN)/python -m pytest

# Debian's ZooKeeper, for the conformance test of the ZooKeeper model (tests/conformance). Where
# it cannot be installed (not Debian, not root) that test is skipped and says why; CI requires it.
zookeeper:
	@[ -f /usr/share/java/zookeeper.jar ] || { command -v apt-get >/dev/null 2>&1 \
		&& [ "$$(id -u)" = 0 ] && apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper >/dev/null; } \
		|| echo "note: Debian's zookeeper package is not installed: the conformance test will be skipped"

# Debian's Chromium, for the test that renders a report headless (tests/report). Where it cannot
# be installed (not Debian, not root) that test is skipped and says why; CI requires it.
chromium:
	@[ -x /usr/bin/chromium ] || { command -v apt-get >/dev/null 2>&1 \
		&& [ "$$(id -u)" = 0 ] && apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "note: Debian's chromium package is not installed: the report's browser test will be skipped"

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
