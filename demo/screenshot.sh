#!/usr/bin/env bash
# Native screenshot test: runs the visualizer window on a 1280×800 Xvfb screen (on whatever Vulkan
# adapter there is; lavapipe in CI) until it has trained 10 steps — its --status-file says how far
# it is — then saves the screen to demo/screenshot.png and checks the run (no error, the loss
# fell, panels with data: both runs, the codec story and its feature map, the frontier with the
# live test accuracy, the batches under the memory cap; the main view fits) and that
# the picture is not blank. Needs xvfb-run and ImageMagick.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v xvfb-run >/dev/null || ! command -v import >/dev/null; then
  # Never a silent pass: scripts/provision.sh installs them (as root).
  echo "FAILED: needs xvfb-run and ImageMagick's import (apt-get install --no-install-recommends xvfb xauth imagemagick)" >&2
  exit 1
fi
cargo build -q -p fdsr-demo
bin="${CARGO_TARGET_DIR:-target}/debug/fdsr-demo"
status="$(mktemp)"
out=demo/screenshot.png
rm -f "$out"
# Inside Xvfb: start the app, wait for 10 steps (a hung app is given up after 20 minutes), shoot.
xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
  "$1" --settings "model=tiny&policy=fdsr&budget=4&batch=16" --status-file "$2" &
  app=$!
  for i in $(seq 1200); do
    steps=$(grep -o "\"steps\":[0-9]*" "$2" 2>/dev/null | cut -d: -f2 || true)
    base=$(grep -o "\"base_steps\":[0-9]*" "$2" 2>/dev/null | cut -d: -f2 || true)
    story=$(grep -o "\"story_bands\":[0-9]*" "$2" 2>/dev/null | cut -d: -f2 || true)
    evals=$(grep -o "\"test_evals\":[0-9]*" "$2" 2>/dev/null | cut -d: -f2 || true)
    [ "${steps:-0}" -ge 10 ] && [ "${base:-0}" -ge 9 ] && [ "${story:-0}" -gt 0 ] && [ "${evals:-0}" -ge 1 ] && break
    kill -0 $app 2>/dev/null || { echo "the visualizer exited early" >&2; exit 1; }
    [ $((i % 60)) -eq 0 ] && echo "$i s: ${steps:-0} steps"
    sleep 1
  done
  sleep 1
  import -window root "$3"
  kill $app
' _ "$bin" "$status" "$out" 2> >(grep -v XDG_RUNTIME_DIR >&2)
json="$(cat "$status")"
rm -f "$status"
echo "native visualizer: $json"
field() { grep -o "\"$1\":[^,}]*" <<<"$json" | cut -d: -f2-; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(field error)" = '""' ] || fail "the run reported an error"
[ "$(field steps)" -ge 10 ] || fail "only $(field steps) steps"
awk -v h="$(field loss_head)" -v t="$(field loss_tail)" 'BEGIN { exit !(t < h) }' || fail "the loss did not fall"
[ "$(field bit_rows)" -gt 0 ] && [ "$(field class_rows)" -gt 0 ] || fail "panels without data"
[ "$(field base_steps)" -ge 9 ] || fail "the fp32 run did not train beside it"
[ "$(field story_bands)" -gt 0 ] && [ "$(field story_bytes)" -gt 0 ] || fail "the codec story has no data"
[ "$(field frontier_points)" -gt 0 ] || fail "the frontier has no points"
[ "$(field test_evals)" -ge 1 ] || fail "no test accuracy for the frontier's live point"
awk -v a="$(field test_accuracy)" 'BEGIN { exit !(a > 0 && a <= 1) }' || fail "test accuracy $(field test_accuracy)"
[ "$(field cap_batch)" -gt "$(field cap_batch_fp32)" ] && [ "$(field cap_batch_fp32)" -gt 0 ] || fail "no batches under the memory cap"
awk -v w="$(grep -o '"story_map":\[[^]]*' <<<"$json" | cut -d, -f3)" 'BEGIN { exit !(w > 0) }' || fail "the story's feature map is not drawn"
[ "$(field fits)" = true ] || fail "the main view does not fit the 1280x800 window"
sd="$(convert "$out" -colorspace gray -format '%[fx:standard_deviation]' info:)"
awk -v s="$sd" 'BEGIN { exit !(s > 0.02) }' || fail "the screenshot is blank (grey level deviation $sd)"
echo "saved $out ($(identify -format '%wx%h' "$out"), grey level deviation $sd)"
echo "1 passed, 0 failed"
