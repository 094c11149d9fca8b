#!/usr/bin/env bash
# check-search.sh - checks every group of the reference's stored search results
# (tests/data/search-outputs.csv, 477 groups, 3692 rows) against `stepsim search --compat reference`:
# same feasible count, the same top-10 throughputs (1e-9) and the same rank-0 configuration.
# Usage: tools/check-search.sh [BUILD_DIR]   (default build/; builds check_search if needed)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
if [[ ! -x "$build/check_search" ]]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" --target check_search -j "$(nproc)" >/dev/null
fi
exec "$build/check_search" "$root/tests/data/search-outputs.csv"
