#!/usr/bin/env bash
# Browser tests: build the wasm bundle; run the smoke compression natively, then in headless
# Chromium on WebGPU, and compare (web/smoke.mjs); then train the visualizer 20 steps in the
# page (web/demo.mjs). Needs chromium and web/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
export WEB_PROFILE="${WEB_PROFILE:-dev}"
bash web/build.sh
native="$(mktemp)"
cargo run -q --bin fdsr -- bench smoke --seed 0 >"$native"
(cd web && node smoke.mjs "$native")
rm -f "$native"
(cd web && node demo.mjs)
