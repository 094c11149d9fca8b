#!/bin/sh
# tools/trace-screenshot.sh [OUT.png] - the default scenario's trace (`stepsim run --trace`) rendered
# offline by speedscope (npm package `speedscope`) in headless Chromium (Debian package `chromium`),
# as in docs/traces.md. Needs build/stepsim, npm (speedscope is installed into build/viewer on first
# use), chromium and python3 (a local web server on 127.0.0.1, since the page fetches the trace).
# Default OUT: docs/trace-speedscope.png.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/docs/trace-speedscope.png}
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
viewer=$root/build/viewer
if [ ! -f "$viewer/node_modules/speedscope/dist/release/index.html" ]; then
    mkdir -p "$viewer"
    (cd "$viewer" && npm install --no-audit --no-fund speedscope@1.25.0 >/dev/null)
fi
site=$(mktemp -d)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    rm -rf "$site"
}
trap cleanup EXIT INT TERM
cp -r "$viewer/node_modules/speedscope/dist/release/." "$site/"
"$root/build/stepsim" run --trace "$site/run-trace.json" --quiet >/dev/null
port=${STEPSIM_SCREENSHOT_PORT:-8765}
(cd "$site" && exec python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
sleep 1
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,420 \
    --virtual-time-budget=60000 --screenshot="$out" \
    "http://127.0.0.1:$port/index.html#profileURL=http://127.0.0.1:$port/run-trace.json" 2>/dev/null
echo "wrote $out"
