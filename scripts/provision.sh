#!/usr/bin/env bash
# Installs what the test command needs, skipping what is already there (a second run takes
# seconds): Debian packages (as root: apt-get with --no-install-recommends; otherwise the missing
# ones are named with the command that installs them, and this fails), the rustfmt and clippy
# components, the wasm32, Windows and macOS targets (for `cargo check` only), the pinned
# wasm-bindgen CLI, and the npm packages of web/. Everything comes from package registries.
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n==== %s ====\n' "$*"; }

APT_PACKAGES=(
  mesa-vulkan-drivers libvulkan1 vulkan-tools libegl1 libegl-mesa0 libgl1-mesa-dri
  xvfb xauth imagemagick chromium chromium-driver fonts-dejavu-core
)
RUST_TARGETS=(wasm32-unknown-unknown x86_64-pc-windows-msvc aarch64-apple-darwin)
WASM_BINDGEN_VERSION=0.2.130

section "Debian packages"
# npm may come from elsewhere (nvm, nodesource): then Debian's nodejs and npm are not needed.
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(nodejs npm)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "all present"
elif [ "$(id -u)" -eq 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "missing Debian packages: ${missing[*]}" >&2
  echo "install them as root: apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

section "rust toolchain"
rustc --version
cargo --version
installed="$(rustup component list --installed)"
for component in rustfmt clippy; do
  grep -q "^${component}" <<<"$installed" || rustup component add "$component"
done
installed="$(rustup target list --installed)"
for target in "${RUST_TARGETS[@]}"; do
  grep -qx "$target" <<<"$installed" || rustup target add "$target"
done
echo "components rustfmt, clippy; targets ${RUST_TARGETS[*]}"

section "wasm-bindgen-cli $WASM_BINDGEN_VERSION"
if ! grep -q "$WASM_BINDGEN_VERSION" <<<"$(wasm-bindgen --version 2>/dev/null || true)"; then
  # Not --locked: one dependency pinned by the crate's lock file is missing from the registry.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi
wasm-bindgen --version

section "npm packages (web/)"
node --version
if [ -d web/node_modules ] && [ web/node_modules/.package-lock.json -nt web/package-lock.json ]; then
  echo "web/node_modules is up to date"
else
  (cd web && npm ci --no-audit --no-fund)
fi
