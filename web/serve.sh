#!/usr/bin/env bash
# Builds the browser bundle (web/build.sh) and serves web/ on 127.0.0.1:${PORT:-8080}; prints the URL.
set -euo pipefail
cd "$(dirname "$0")/.."
bash web/build.sh
node web/harness.mjs "${PORT:-8080}"
