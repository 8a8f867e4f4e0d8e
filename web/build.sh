#!/usr/bin/env bash
# Builds the browser bundle into web/pkg (plain cargo for wasm32 + the pinned wasm-bindgen CLI)
# and the visualizer's Fashion-MNIST subset into web/data (fetching the data set first if
# needed; without it the page trains on synthetic images and says so).
# (No wasm-opt: Debian's binaryen 108 output fails in the browser.)
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${WEB_PROFILE:-release}"
# In the dev build the bundle's own crates (the engine that records every step, the app) are
# optimized as its dependencies are (Cargo.toml): their debug code made the browser's first step
# about 1.5 s slower (BENCHMARKS.md, issue 21). Only this build: native tests keep opt-level 0.
opt=()
if [ "$profile" = dev ]; then
  for p in fdsr fdsr-demo fdsr-web; do opt+=(--config "profile.dev.package.$p.opt-level=2"); done
fi
cargo build -p fdsr-web --lib --target wasm32-unknown-unknown --profile "$profile" "${opt[@]}"
dir="$profile"; [ "$profile" = dev ] && dir=debug
wasm-bindgen --target web --out-dir web/pkg "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/$dir/fdsr_web.wasm"
echo "built web/pkg ($(du -sh web/pkg | cut -f1))"
# fdsr-demo fetches Fashion-MNIST into the user's data folder (~/.local/share/fdsr, or $FDSR_DATA)
# first if it is missing.
if ! cargo run -q --profile "$profile" -p fdsr-demo -- --write-subset web/data; then
  echo "warning: Fashion-MNIST is not available; the visualizer will train on synthetic images" >&2
fi
