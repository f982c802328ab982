# Two commands (README "Quick start"): `make demo` and `make test`.
# Each builds its own virtual env from pyproject.toml, so a fresh clone needs nothing else.
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/flower demo

test: $(STAMP)
	$(VENV)/bin/python -m pytest

clean:
	rm -rf $(VENV)
