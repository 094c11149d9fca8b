#!/usr/bin/env bash
# run-tests.sh - install dependencies, check formatting, build and run every test, in a normal
# and a sanitizer build. This is what CI runs (.ci/run); it works from any directory.
#
# Usage: tools/run-tests.sh [--no-format] [--no-asan] [--no-fuzz] [-h|--help]
#   --no-format  skip the clang-format check (tools/check-format.sh)
#   --no-asan    skip the AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/)
#   --no-fuzz    skip the fuzz smoke run (tools/fuzz.sh, build-fuzz/)
# Default: everything. Steps:
#   1. deps     install missing Debian packages (tools/lib-deps.sh; STEPSIM_SKIP_DEPS=1 skips)
#   2. format   tools/check-format.sh over model/ topo/ sim/ traces/ tools/ tests/
#   3. build    cmake -B build      -DCMAKE_BUILD_TYPE=Release,                   build, ctest
#   4. asan     cmake -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSTEPSIM_SANITIZE=ON, build, ctest
#   5. fuzz     tools/fuzz.sh 15: each libFuzzer target (tests/fuzz) 15 s on its seed corpus, clang
#               (Debian clang and libclang-rt-dev, in tools/lib-deps.sh); any crash, leak or
#               sanitizer report fails the step
# Every step runs even if an earlier one failed (a build's tests only run if it compiled), then a
# summary with timings is printed. Exit status: 0 if every step passed, 1 otherwise, 2 on bad usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=tools/lib-deps.sh
. tools/lib-deps.sh

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
}

do_format=1
do_asan=1
do_fuzz=1
for arg in "$@"; do
    case $arg in
    --no-format) do_format=0 ;;
    --no-asan) do_asan=0 ;;
    --no-fuzz) do_fuzz=0 ;;
    -h | --help)
        usage
        exit 0
        ;;
    *)
        echo "run-tests: unknown argument: $arg" >&2
        usage >&2
        exit 2
        ;;
    esac
done

jobs=$(nproc 2>/dev/null || echo 2)
summary=()
failed=0

now_ms() {
    date +%s%3N
}

# step NAME CMD...: run CMD, record PASS/FAIL and the elapsed time under NAME.
step() {
    local name=$1
    shift
    local t0 t1 rc=0
    printf '\n[stepsim] ==== %s ====\n' "$name" >&2
    t0=$(now_ms)
    "$@" || rc=$?
    t1=$(now_ms)
    local secs
    secs=$(awk -v ms=$((t1 - t0)) 'BEGIN { printf "%.1f", ms / 1000 }')
    if ((rc == 0)); then
        summary+=("$(printf '  PASS  %-22s %7ss' "$name" "$secs")")
    else
        summary+=("$(printf '  FAIL  %-22s %7ss  (exit %d)' "$name" "$secs" "$rc")")
        failed=1
    fi
    return "$rc"
}

skip() {
    summary+=("$(printf '  SKIP  %-22s           (%s)' "$1" "$2")")
}

# shellcheck disable=SC2317 # called through step(), which shellcheck cannot follow
configure_and_build() {
    local dir=$1
    shift
    cmake -S . -B "$dir" "$@" && cmake --build "$dir" --parallel "$jobs"
}

# shellcheck disable=SC2317 # called through step(), which shellcheck cannot follow
run_ctest() {
    # --no-tests=error: a suite that silently finds nothing must not pass.
    ctest --test-dir "$1" --output-on-failure --no-tests=error -j "$jobs"
}

# shellcheck disable=SC2317 # called through step(), which shellcheck cannot follow
run_ctest_sanitized() {
    ASAN_OPTIONS=detect_leaks=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_ctest "$1"
}

t_start=$(now_ms)

if ! step "deps" stepsim_install_deps; then
    # Without the toolchain nothing below can work; say so instead of piling up errors.
    skip "format" "dependencies missing"
    skip "build (Release)" "dependencies missing"
    skip "asan build (Debug)" "dependencies missing"
    skip "fuzz smoke" "dependencies missing"
else
    if ((do_format)); then
        step "format" tools/check-format.sh || true
    else
        skip "format" "--no-format"
    fi

    if step "build (Release)" configure_and_build build -DCMAKE_BUILD_TYPE=Release; then
        step "ctest build/" run_ctest build || true
    else
        skip "ctest build/" "build failed"
    fi

    if ((do_asan)); then
        if step "asan build (Debug)" configure_and_build build-asan \
            -DCMAKE_BUILD_TYPE=Debug -DSTEPSIM_SANITIZE=ON; then
            step "ctest build-asan/" run_ctest_sanitized build-asan || true
        else
            skip "ctest build-asan/" "build failed"
        fi
    else
        skip "asan build + ctest" "--no-asan"
    fi

    if ((do_fuzz)); then
        step "fuzz smoke (15 s each)" tools/fuzz.sh 15 || true
    else
        skip "fuzz smoke" "--no-fuzz"
    fi
fi

t_end=$(now_ms)
total=$(awk -v ms=$((t_end - t_start)) 'BEGIN { printf "%.1f", ms / 1000 }')
{
    printf '\n[stepsim] ==== summary ====\n'
    printf '%s\n' "${summary[@]}"
    if ((failed)); then
        printf '  FAILED after %ss\n' "$total"
    else
        printf '  all passed in %ss\n' "$total"
    fi
} >&2
exit "$failed"
