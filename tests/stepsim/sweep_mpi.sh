#!/usr/bin/env bash
# sweep_mpi.sh - ctest stepsim.sweep_mpi: `mpirun -np 2` gives the lines of a serial run (order aside),
# `mpirun -np 3 ... --resume` completes a file cut in the middle of a line to the same lines, and a bad
# grid under mpirun exits non-zero with one message. Exit 77 (skipped) when MPI is not built in or
# mpirun is missing.
#
# Usage: sweep_mpi.sh STEPSIM GRID MPI_FOUND
set -euo pipefail

stepsim=$1
grid=$2
mpi_found=$3

if [[ $mpi_found != TRUE && $mpi_found != ON && $mpi_found != 1 ]]; then
    echo "stepsim.sweep_mpi: skipped: this build has no MPI (CMake did not find it; install libopenmpi-dev)"
    exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "stepsim.sweep_mpi: skipped: mpirun not found (install openmpi-bin)"
    exit 77
fi

# Open MPI refuses to run as root without these; more ranks than cores need --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI keeps some of its memory until exit; LeakSanitizer (sanitizer build) would report it as
# leaks of stepsim. Address and undefined-behaviour checks stay on.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

dir=$(mktemp -d "${TMPDIR:-/tmp}/stepsim-sweep-mpi.XXXXXX")
trap 'rm -rf "$dir"' EXIT

fail() {
    echo "stepsim.sweep_mpi: FAIL: $*" >&2
    exit 1
}

same_sets() {
    cmp -s <(sort "$1") <(sort "$2")
}

"$stepsim" sweep "$grid" --out "$dir/serial.jsonl" >/dev/null
n=$(wc -l <"$dir/serial.jsonl")

mpirun -np 2 --oversubscribe "$stepsim" sweep "$grid" --out "$dir/mpi.jsonl" >"$dir/mpi.out" ||
    fail "mpirun -np 2 exited with $?"
same_sets "$dir/serial.jsonl" "$dir/mpi.jsonl" || fail "mpirun -np 2: lines differ from the serial run"
grep -q "with 2 processes" "$dir/mpi.out" || fail "mpirun -np 2: summary: $(cat "$dir/mpi.out")"

# Cut the file in the middle of a line; --resume with 3 ranks (2 workers) cuts the torn line and
# completes the file.
size=$(stat -c %s "$dir/mpi.jsonl")
head -c $((size / 2)) "$dir/mpi.jsonl" >"$dir/resumed.jsonl"
mpirun -np 3 --oversubscribe "$stepsim" sweep "$grid" --out "$dir/resumed.jsonl" --resume >"$dir/resumed.out" \
    2>"$dir/resumed.err" || fail "mpirun -np 3 --resume exited with $?"
grep -q "cut a torn last line" "$dir/resumed.err" || fail "no torn line reported: $(cat "$dir/resumed.err")"
grep -q "with 3 processes" "$dir/resumed.out" || fail "mpirun -np 3: summary: $(cat "$dir/resumed.out")"
same_sets "$dir/serial.jsonl" "$dir/resumed.jsonl" || fail "mpirun -np 3 --resume: lines differ from the serial run"

# A bad grid under mpirun: exit 2 and one line (from rank 0 only).
echo '{"command": "rn"}' >"$dir/bad.json"
rc=0
mpirun -np 2 --oversubscribe "$stepsim" sweep "$dir/bad.json" --out "$dir/bad.jsonl" 2>"$dir/bad.err" >/dev/null || rc=$?
[[ $rc -ne 0 ]] || fail "a bad grid under mpirun exited 0"
[[ ! -e $dir/bad.jsonl ]] || fail "a bad grid under mpirun created the output file"
[[ $(grep -c 'is not a command' "$dir/bad.err") -eq 1 ]] || fail "bad grid: stderr: $(cat "$dir/bad.err")"

echo "stepsim.sweep_mpi: $n points: mpirun -np 2 equals the serial run; -np 3 --resume completes a cut file"
