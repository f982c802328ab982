# Two commands (README "Quick start"): `make demo` and `make test`.
# Each builds its own virtual env from pyproject.toml, so a fresh clone needs nothing else;
# `make test` also installs the extension's npm packages (npm ci) and, once into a cache outside
# the clone, code-server and Debian's chromium for the editor end-to-end tests.
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
CLIENT := vscode-client

.PHONY: demo test test-python test-editor lint vsix clean bytecode

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $(STAMP)

$(CLIENT)/node_modules/.package-lock.json: $(CLIENT)/package-lock.json
	cd $(CLIENT) && npm ci --no-audit --no-fund --loglevel=error

# An editable install has no bytecode until an import writes it, which PYTHONDONTWRITEBYTECODE (set on some
# machines, this one among them) forbids: each process would compile flower again (~0.2-0.5 s of CPU). Compiled here
# as pip compiles an installed wheel; a source changed since is compiled in memory, as before.
bytecode: $(STAMP)
	$(VENV)/bin/python -m compileall -q server/flower

demo: $(STAMP) bytecode
	$(VENV)/bin/flower demo

test: lint test-python test-editor

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --platform darwin  # issue 33: each platform's branches of core/host.py (and every caller) type-check
	$(VENV)/bin/mypy --platform win32
	$(VENV)/bin/lint-imports --no-cache --no-logo  # D3's layers ([tool.importlinter] in pyproject.toml; issue 33)

test-python: $(STAMP) bytecode
	$(VENV)/bin/python -m pytest -n 2 --durations=25

test-editor: $(STAMP) $(CLIENT)/node_modules/.package-lock.json
	bash $(CLIENT)/e2e/setup.sh >/dev/null  # chromium first: the webview page's unit tests run in it too
	cd $(CLIENT) && npm run --silent typecheck && npm test
	bash $(CLIENT)/e2e/run.sh

vsix: $(CLIENT)/node_modules/.package-lock.json
	cd $(CLIENT) && npm run package

clean:
	rm -rf $(VENV) $(CLIENT)/node_modules $(CLIENT)/dist $(CLIENT)/python $(CLIENT)/*.vsix
