# Two commands do all setup on a fresh machine:
#   make run    install, then run every stage on the embedded default catalog and build _site/
#   make test   install, lint (ruff, line length included), then run the test suite against the real reference servers
VENV := .venv
STAMP := $(VENV)/.installed-stamp

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --upgrade pip
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

.PHONY: run test serve install
install: $(STAMP)
	$(VENV)/bin/scoreboard install

run: $(STAMP)
	$(VENV)/bin/scoreboard run

test: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest

serve: $(STAMP)
	$(VENV)/bin/scoreboard serve
