#!/usr/bin/env bash
# run-example.sh - install dependencies, build stepsim (Release) and run the default job.
#
# Usage: tools/run-example.sh [STEPSIM-ARGS...]
#   With no arguments: `stepsim estimate`, then `stepsim run` (one training step simulated event by
#   event) on the built-in default scenario (gpt3_1T on 4096 A100 GPUs, NVLink domains of 8, global
#   batch 4096), writing a Chrome trace of one replica of every pipeline stage to build/run-trace.json
#   (open it in https://ui.perfetto.dev or chrome://tracing; README, "run").
#   With arguments: `stepsim ARGS...` instead, e.g. tools/run-example.sh search --strategy all
# Works from any directory. Set-up and build messages go to stderr, stepsim's results to stdout.
# STEPSIM_SKIP_DEPS=1 skips the Debian package check (tools/lib-deps.sh).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=tools/lib-deps.sh
. tools/lib-deps.sh

case ${1:-} in
-h | --help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 0
    ;;
esac

stepsim_install_deps "${STEPSIM_DEB_PACKAGES[@]}"

jobs=$(nproc 2>/dev/null || echo 2)
stepsim_log "configure: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >&2
stepsim_log "build: cmake --build build --target stepsim --parallel $jobs"
cmake --build build --target stepsim --parallel "$jobs" >&2

run() {
    printf '$ stepsim %s\n' "$*"
    build/stepsim "$@"
}

if (($# > 0)); then
    run "$@"
else
    run estimate
    echo
    run run --trace build/run-trace.json --trace-ranks 0-255
    echo
    echo 'Open build/run-trace.json in https://ui.perfetto.dev (or chrome://tracing).'
fi
