#!/usr/bin/env bash
# fuzz.sh - build the libFuzzer targets of tests/fuzz with clang and run each for a given time.
#
# Usage: tools/fuzz.sh [SECONDS] [TARGET...]
#   SECONDS  time per target (default 60); one target per core at a time (nproc), each alone
#            on its core
#   TARGET   scenario, topology, graphml, measured, grid, journal, chakra (default: all seven)
# Environment:
#   STEPSIM_FUZZ_BUILD   build directory (default build-fuzz/ in the repository)
#   STEPSIM_FUZZ_ARGS    extra libFuzzer arguments (e.g. "-runs=2000000", "-jobs=2")
# Each target is built with -fsanitize=fuzzer,address,undefined (cmake -DSTEPSIM_FUZZ=ON, clang;
# Debian packages clang and libclang-rt-14-dev, see tools/lib-deps.sh) and started on a working
# corpus in BUILD/corpus/TARGET, seeded from tests/fixtures and tests/fuzz/seeds (inputs libFuzzer
# finds are kept there for the next run), with a dictionary of the quoted words in the fixtures.
# A crash, leak, sanitizer report or broken contract (tests/fuzz/fuzz_util.h) stops the target and
# leaves the input in BUILD/artifacts/TARGET/; the script goes on with the other targets, prints
# one summary line per target (executions, coverage, time) and exits 1 if any target failed, 2 on
# bad usage, 0 otherwise. docs/fuzzing.md has the figures of a long run.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

all_targets=(scenario topology graphml measured grid journal chakra)
seconds=60
if (($# > 0)) && [[ $1 =~ ^[0-9]+$ ]]; then
    seconds=$1
    shift
fi
if (($# > 0)) && [[ $1 == -h || $1 == --help ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 0
fi
targets=("$@")
((${#targets[@]} > 0)) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
    if [[ " ${all_targets[*]} " != *" $t "* ]]; then
        echo "fuzz.sh: unknown target: $t; allowed: ${all_targets[*]}" >&2
        exit 2
    fi
done
if ! command -v clang >/dev/null 2>&1; then
    echo "fuzz.sh: clang not found; install the Debian packages clang and libclang-rt-14-dev" >&2
    exit 1
fi

build=${STEPSIM_FUZZ_BUILD:-$root/build-fuzz}
# The targets write each input to a file in TMPDIR: on tmpfs that costs microseconds, on a disk
# milliseconds. A private directory, removed at the end.
tmp_parent=${TMPDIR:-/tmp}
if [[ -z ${TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then
    tmp_parent=/dev/shm
fi
TMPDIR=$(mktemp -d "$tmp_parent/stepsim-fuzz.XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTEPSIM_FUZZ=ON >/dev/null
cmake --build "$build" --parallel "$(nproc 2>/dev/null || echo 2)" >/dev/null

# seeds TARGET: the seed files of a target (fixtures of its input surface, and tests/fuzz/seeds).
seeds() {
    local f=tests/fixtures
    case $1 in
    scenario) ls $f/*.json $f/scenarios/*.json $f/jobs/*.json $f/topo/scenario_*.json $f/golden/*.json ;;
    topology) ls $f/topo/*.json tests/fuzz/seeds/topology/* ;;
    graphml) ls $f/topo/*.graphml tests/fuzz/seeds/graphml/* ;;
    measured) ls $f/measured/*.csv tests/data/*-runs.csv ;;
    grid) ls $f/sweep/*.json ;;
    journal) ls tests/fuzz/seeds/journal/* ;;
    chakra) ls tests/data/chakra/astra-sim/all_reduce/8npus_1024MB/all_reduce.0.et tests/fuzz/seeds/chakra/* ;;
    esac
    if [[ -d tests/fixtures/fuzz/$1 ]]; then
        ls tests/fixtures/fuzz/"$1"/*
    fi
}

# A dictionary of the quoted keys and names in the JSON and GraphML fixtures (one token a line).
dict=$build/fuzz.dict
grep -rhoE '"[A-Za-z0-9_.:-]{1,40}"' tests/fixtures tests/fuzz/seeds --include='*.json' --include='*.graphml' |
    sort -u >"$dict"

# fuzz_one TARGET: run one target for the time given; its summary line goes to $results/TARGET, its
# exit status says whether it failed.
fuzz_one() {
    local t=$1
    local corpus=$build/corpus/$t
    local artifacts=$build/artifacts/$t
    mkdir -p "$corpus" "$artifacts"
    while read -r s; do
        cp "$s" "$corpus/seed-$(basename "$(dirname "$s")")-$(basename "$s")"
    done < <(seeds "$t")
    # A measured run's cost grows with its rows (each is predicted twice and calibrated), a GraphML
    # file's with its graph (routes from every GPU, the summary): inputs of up to about 15 rows, and
    # graphs of a few GPUs, keep them near the others' speed.
    local max_len=8192
    [[ $t != measured ]] || max_len=1536
    [[ $t != graphml ]] || max_len=4096
    local extra=()
    [[ $t == measured || $t == chakra ]] || extra+=(-dict="$dict")
    [[ $t != chakra ]] || extra+=(-dict=tests/fuzz/chakra.dict)
    local log=$build/fuzz-$t.log
    echo "fuzz.sh: $t for ${seconds}s (log $log)" >&2
    local rc=0 t0 t1 runs cov
    t0=$(date +%s)
    # shellcheck disable=SC2086 # STEPSIM_FUZZ_ARGS is a list of words on purpose
    ASAN_OPTIONS=detect_leaks=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len="$max_len" -timeout=30 -rss_limit_mb=4096 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "${extra[@]}" ${STEPSIM_FUZZ_ARGS:-} \
        "$corpus" >"$log" 2>&1 || rc=$?
    t1=$(date +%s)
    runs=$(awk '/^stat::number_of_executed_units:/ { print $2 }' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
    if ((rc != 0)) || grep -qE '^(==[0-9]+==ERROR|SUMMARY: )|runtime error:' "$log"; then
        printf 'FAIL  %-9s exit %d after %ss; see %s and %s\n' "$t" "$rc" $((t1 - t0)) "$log" "$artifacts" \
            >"$results/$t"
        grep -E 'ERROR|runtime error|SUMMARY|contract broken|Test unit written' "$log" | head -5 >&2 || true
        return 1
    fi
    printf 'ok    %-9s %10s runs  %-22s %5ss\n' "$t" "${runs:-?}" "${cov:-}" $((t1 - t0)) >"$results/$t"
}

# One target per core at a time (libFuzzer runs one process on one core): each still gets its full
# time, and the whole run takes about ceil(targets / cores) x SECONDS.
results=$TMPDIR/results
mkdir -p "$results"
slots=$(nproc 2>/dev/null || echo 2)
failed=0
running=0
for t in "${targets[@]}"; do
    if ((running >= slots)); then
        wait -n || failed=1
        running=$((running - 1))
    fi
    fuzz_one "$t" &
    running=$((running + 1))
done
while ((running > 0)); do
    wait -n || failed=1
    running=$((running - 1))
done
summary=()
for t in "${targets[@]}"; do
    summary+=("$(cat "$results/$t" 2>/dev/null || printf 'FAIL  %-9s no result' "$t")")
    [[ -s $results/$t ]] || failed=1
done
printf '%s\n' "${summary[@]}" >&2
exit "$failed"
