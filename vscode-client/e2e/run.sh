#!/usr/bin/env bash
# The extension's end-to-end tests in a real VS Code, as `make test` runs them: installs the tools
# once (setup.sh), builds the .vsix when it is missing or older than its sources, then runs every
# scenario with node's test runner. Exits non-zero when anything fails.
set -euo pipefail

E2E="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT="$(dirname "$E2E")"
ROOT="$(dirname "$CLIENT")"

bash "$E2E/setup.sh" >/dev/null
[[ -x "$ROOT/.venv/bin/python" ]] || make -C "$ROOT" .venv/.installed >/dev/null

cd "$CLIENT"
# npm ci from the committed lockfile, again only when the lockfile changed since the last one.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
vsix="$(node -p 'const p = require("./package.json"); `${p.name}-${p.version}.vsix`')"
# The .vsix carries the server's wheel too (python/, wheel.mjs): its Python sources count.
sources=(src l10n media package.json package.nls.json package.nls.zh-cn.json esbuild.mjs wheel.mjs ../pyproject.toml ../server)
if [[ ! -f "$vsix" || -n "$(find "${sources[@]}" -newer "$vsix" -not -path '*/__pycache__*' -not -path '*.egg-info*' -print -quit 2>/dev/null)" ]]; then
  npm run --silent package >/dev/null
fi

# The harness and tests are plain .mjs checked as strict TypeScript (// @ts-check).
npx --no-install tsc --noEmit --allowJs --checkJs --strict --module nodenext --moduleResolution nodenext \
  --target es2022 --types node --skipLibCheck "$E2E"/harness.mjs "$E2E"/editor.test.mjs "$E2E"/bench.mjs

rm -rf test-results
mkdir -p test-results
# One scenario at a time (each starts code-server, a language server and the CLI); each test
# bounds itself, and the whole run is bounded too so a hang fails instead of blocking `make test`.
# FLOWER_E2E_ONLY='^10 ' runs only the scenarios whose name matches (node's --test-name-pattern).
only=()
[[ -n "${FLOWER_E2E_ONLY:-}" ]] && only=(--test-name-pattern="$FLOWER_E2E_ONLY")
exec timeout --kill-after=10 1800 node --test --test-concurrency=1 "${only[@]}" "$E2E"/*.test.mjs
