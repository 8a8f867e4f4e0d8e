#!/usr/bin/env bash
# The project's test command (README "Tests"): provisions what it needs (scripts/provision.sh:
# Debian packages when run as root, Rust components and targets, wasm-bindgen-cli, npm packages),
# then format, lints on native and wasm32, the API docs, type checks for Windows (DX12) and macOS (Metal), all
# tests, the cooperative-matrix tests on Mesa 26.2's lavapipe (as root), the native visualizer under
# Xvfb and the browser tests. CI runs it through .ci/run.
#
# GPU tests skip with a message when no adapter is found, unless REQUIRE_GPU=1 (CI sets it) turns
# "no adapter" into a failure. On Debian the software Vulkan adapter is lavapipe ("llvmpipe", in
# mesa-vulkan-drivers, which provisioning installs).
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n==== %s ====\n' "$*"; }

bash scripts/provision.sh

# Mesa's software drivers want a private runtime directory; a bare CI root shell has none.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
  XDG_RUNTIME_DIR="$(mktemp -d)"
  chmod 700 "$XDG_RUNTIME_DIR"
  export XDG_RUNTIME_DIR
fi

section "adapter"
vulkaninfo --summary 2>/dev/null | grep -E 'deviceName|driverName' || echo "vulkaninfo found no Vulkan device"

section "cargo fmt --all --check"
cargo fmt --all --check

section "cargo clippy (native, all targets, warnings denied)"
cargo clippy --workspace --all-targets -- -D warnings

section "cargo clippy (wasm32-unknown-unknown, library, warnings denied)"
cargo clippy --target wasm32-unknown-unknown -p fdsr -p fdsr-web -p fdsr-demo --lib -- -D warnings

section "cargo doc (the library's API docs, broken links denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p fdsr

section "cargo check (the library for Windows/DX12 and macOS/Metal)"
cargo check -p fdsr --lib --target x86_64-pc-windows-msvc
cargo check -p fdsr --lib --target aarch64-apple-darwin

section "cargo test --workspace (REQUIRE_GPU=${REQUIRE_GPU:-0}; includes naga validation of every shader)"
cargo test --workspace

section "cooperative matrices on Mesa 26.2's lavapipe (scripts/coop-lavapipe.sh)"
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: needs root (a Debian sid chroot); run scripts/coop-lavapipe.sh as root"
else
  rc=0
  bash scripts/coop-lavapipe.sh || rc=$?
  if [ "$rc" -eq 3 ]; then
    echo "SKIPPED: the sid root could not be built (Debian's registry unreachable?)"
  elif [ "$rc" -ne 0 ]; then
    exit "$rc"
  fi
fi

section "native visualizer under Xvfb (demo/screenshot.sh)"
bash demo/screenshot.sh

section "browser tests (web/test.sh)"
bash web/test.sh

section "all checks passed"
