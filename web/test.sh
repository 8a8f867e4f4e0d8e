#!/usr/bin/env bash
# Browser smoke test: build the wasm bundle, run the same smoke compression natively, then in
# headless Chromium on WebGPU, and compare (web/smoke.mjs). Needs chromium and web/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
WEB_PROFILE="${WEB_PROFILE:-dev}" bash web/build.sh
native="$(mktemp)"
cargo run -q --bin fdsr -- bench smoke --seed 0 >"$native"
(cd web && node smoke.mjs "$native")
rm -f "$native"
