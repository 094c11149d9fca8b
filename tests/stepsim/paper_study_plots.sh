#!/bin/sh
# paper_study_plots.sh - tools/paper-study.sh --plots-only on a small study.csv and best.csv: the
# points where no strategy fits are listed in nofit.csv (and only those: a point where one strategy
# fits is not), the scaling panels mark each strategy's no-fit GPU counts and the breakdown panels draw
# "does not fit" bars from nofit.csv; with gnuplot the PNG files are written. Structural: the script
# and the CSV, never pixels.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d /tmp/stepsim-study-plots-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
fail() {
    echo "paper_study_plots: FAIL: $*" >&2
    exit 1
}
# every panel of the four figure pairs has data: 4 GPUs fit nowhere, 8 with one strategy, 64 with all
{
    echo "model,system,nvs,gpus,strategy,compat,status,throughput_samples_per_s,iteration_time_s,memory_gb,layout"
    for m in gpt3_1T vit_era5; do for c in reference corrected; do for sy in A100 H200 B200; do for n in 4 8 64; do
        for st in 1d 2d 2d-seqp; do
            echo "$m,$sy,$n,4,$st,$c,no-fit,,,,"
            echo "$m,$sy,$n,64,$st,$c,ok,10,400,70,dp 1"
        done
        echo "$m,$sy,$n,8,1d,$c,no-fit,,,,"
        echo "$m,$sy,$n,8,2d,$c,ok,2,2000,75,dp 1"
        echo "$m,$sy,$n,8,2d-seqp,$c,no-fit,,,,"
    done; done; done; done
} >"$dir/study.csv"
{
    echo "model,system,nvs,gpus,compat,strategy,throughput_samples_per_s,iteration_time_s,layout,compute_s,memory_s,tp_comm_s,pp_comm_s,dp_comm_s,bubble_s"
    for m in gpt3_1T vit_era5; do for c in reference corrected; do for sy in A100 H200 B200; do for n in 4 8 64; do
        echo "$m,$sy,$n,8,$c,2d,2,2000,dp 1,1500,100,200,100,50,50"
        echo "$m,$sy,$n,64,$c,1d,10,400,dp 1,300,20,40,20,10,10"
    done; done; done; done
} >"$dir/best.csv"
cd "$root"
tools/paper-study.sh --plots-only --out "$dir" >"$dir/log" 2>&1 || fail "exit $?: $(cat "$dir/log")"
[ "$(wc -l <"$dir/nofit.csv")" -eq 37 ] || fail "nofit.csv: $(wc -l <"$dir/nofit.csv") lines, want 1 + 36"
grep -qx "gpt3_1T,A100,8,4,corrected" "$dir/nofit.csv" || fail "nofit.csv misses gpt3_1T,A100,8,4,corrected"
! grep -q ",8,8," "$dir/nofit.csv" || fail "nofit.csv lists a point where a strategy fits"
gp=$dir/plots.gp
grep -q "strcol(7) eq \"no-fit\"" "$gp" || fail "the scaling panels do not select the no-fit points"
grep -q "': does not fit'" "$gp" || fail "the scaling panels' key does not say 'does not fit'"
grep -q "'$dir/nofit.csv' skip 1" "$gp" || fail "the breakdown panels do not read nofit.csv"
grep -q "title 'does not fit'" "$gp" || fail "the breakdown panels' key does not say 'does not fit'"
[ "$(grep -c "does not fit" "$gp")" -eq 12 ] || fail "expected 3 marks in each of the 4 figure pairs"
if command -v gnuplot >/dev/null 2>&1; then
    for f in scaling-gpt3_1T-corrected breakdown-gpt3_1T-corrected; do
        [ -s "$dir/$f.png" ] || fail "$f.png not written: $(cat "$dir/gnuplot.log")"
    done
fi
# a directory without the tables: one line, exit 2
rm "$dir/best.csv"
if tools/paper-study.sh --plots-only --out "$dir" 2>"$dir/err"; then fail "no best.csv: exit 0"; fi
[ "$(wc -l <"$dir/err")" -eq 1 ] && grep -q "best.csv" "$dir/err" || fail "no best.csv: $(cat "$dir/err")"
echo "paper_study_plots: ok"
