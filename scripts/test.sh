#!/usr/bin/env bash
# The project's test command (README "Tests"): format, lints on native and wasm32, all tests,
# then the browser tests when web/ provides them.
#
# GPU tests skip with a message when no adapter is found, unless REQUIRE_GPU=1 (CI sets it) turns
# "no adapter" into a failure. On Debian, `apt-get install mesa-vulkan-drivers` gives the software
# Vulkan adapter (lavapipe, "llvmpipe").
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n==== %s ====\n' "$*"; }

# Mesa's software drivers want a private runtime directory; a bare CI root shell has none.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
  XDG_RUNTIME_DIR="$(mktemp -d)"
  chmod 700 "$XDG_RUNTIME_DIR"
  export XDG_RUNTIME_DIR
fi

section "cargo fmt --all --check"
cargo fmt --all --check

section "cargo clippy (native, all targets, warnings denied)"
cargo clippy --workspace --all-targets -- -D warnings

section "cargo clippy (wasm32-unknown-unknown, library, warnings denied)"
if ! grep -qx 'wasm32-unknown-unknown' <<<"$(rustup target list --installed 2>/dev/null || true)"; then
  echo "the wasm32 target is missing: run 'rustup target add wasm32-unknown-unknown'" >&2
  exit 1
fi
cargo clippy --target wasm32-unknown-unknown -p fdsr -p fdsr-web -p fdsr-demo --lib -- -D warnings

section "cargo test --workspace (REQUIRE_GPU=${REQUIRE_GPU:-0}; includes naga validation of every shader)"
cargo test --workspace

section "native visualizer under Xvfb (demo/screenshot.sh)"
bash demo/screenshot.sh

section "browser tests (web/test.sh)"
if [ -f web/test.sh ]; then
  bash web/test.sh
else
  echo "skipped: web/test.sh does not exist yet"
fi

section "all checks passed"
