#!/usr/bin/env bash
# Installs what the editor end-to-end tests need, once, into a cache outside the clone
# (EDITOR_E2E.md): Debian's chromium and ripgrep, and code-server (a real VS Code workbench).
# A second run finds the stamp and returns at once. Prints the code-server binary's path last.
set -euo pipefail

CACHE="${FLOWER_E2E_CACHE:-$HOME/.cache/flower-e2e}"
CS_VERSION=4.100.3
CS_BIN="$CACHE/node_modules/.bin/code-server"
STAMP="$CACHE/.code-server-$CS_VERSION.installed"

# Debian packages: chromium (the browser that drives the workbench), a CJK font (so the
# screenshots show 需求.md and the zh-cn banner, not boxes) and ripgrep (seeds @vscode/ripgrep,
# whose own postinstall downloads from outside) always; the compilers and headers only while
# code-server still has to be built (node-pty, argon2, kerberos).
wanted=(chromium fonts-wqy-microhei ripgrep)
if [[ ! -f "$STAMP" ]]; then wanted+=(build-essential pkg-config libkrb5-dev); fi
missing=()
for pkg in "${wanted[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  if [[ "$(id -u)" != 0 ]]; then
    echo "flower e2e: install first: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "flower e2e: apt-get install ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [[ ! -f "$STAMP" ]]; then
  echo "flower e2e: installing code-server@$CS_VERSION into $CACHE (a few minutes, once)" >&2
  mkdir -p "$CACHE"
  # @vscode/ripgrep 1.15.11 would fetch rg v13.0.0-10 from GitHub; hand it Debian's rg in
  # the tarball it looks for in its cache instead.
  case "$(uname -m)" in
    x86_64) rg_target=x86_64-unknown-linux-musl ;;
    aarch64) rg_target=aarch64-unknown-linux-gnu ;;
    *) rg_target="$(uname -m)-unknown-linux-gnu" ;;
  esac
  rg_cache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
  rg_tar="$rg_cache/ripgrep-v13.0.0-10-$rg_target.tar.gz"
  if [[ ! -f "$rg_tar" ]]; then
    mkdir -p "$rg_cache"
    rg_dir="$(mktemp -d)"
    cp "$(command -v rg)" "$rg_dir/rg"
    tar -czf "$rg_tar" -C "$rg_dir" rg
    rm -rf "$rg_dir"
  fi
  [[ -f "$CACHE/package.json" ]] || echo '{"name":"flower-e2e-cache","private":true}' >"$CACHE/package.json"
  # unsafe_perm: code-server's postinstall refuses root otherwise; nodedir: node-gyp uses
  # Debian's node headers instead of downloading them; yes: node-pty's postinstall runs npx.
  (cd "$CACHE" && npm_config_unsafe_perm=true npm_config_nodedir=/usr npm_config_yes=true \
    npm install --no-audit --no-fund --loglevel=error "code-server@$CS_VERSION" >"$CACHE/install.log" 2>&1) \
    || { echo "flower e2e: code-server install failed; see $CACHE/install.log" >&2; tail -20 "$CACHE/install.log" >&2; exit 1; }
  "$CS_BIN" --version >/dev/null
  touch "$STAMP"
fi
echo "$CS_BIN"
