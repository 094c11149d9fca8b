#!/usr/bin/env bash
# paper-study.sh - the design-space study of arXiv 2410.00273 as one stepsim sweep: CSV tables,
# gnuplot figures, and a check of the --compat reference half against the reference's results.
#
# Usage: tools/paper-study.sh [--out DIR] [--np N] [--build DIR] [--resume] [--plots-only] [-h|--help]
#   --out DIR    where everything goes (default: build/paper-study)
#   --np N       also run the sweep under `mpirun -np N --oversubscribe` and check that its lines
#                equal the serial run's (default 2 when mpirun is there and stepsim links MPI; 0: off)
#   --build DIR  the CMake build directory (default: build); configured (Release) and built if needed
#   --resume     complete an interrupted serial sweep (stepsim sweep --resume) instead of starting over
#   --plots-only redraw the figures from DIR's study.csv and best.csv (no build, sweep or check)
# The study: gpt3_1T and vit_era5; A100, H200, B200; NVLink domains of 4, 8 and 64 GPUs; 4 to 16,384
# GPUs in powers of two; strategies 1d, 2d, 2d-seqp, each searched on its own (top 10 layouts);
# compat reference and corrected; global batch 4096 sequences: 1,404 points.
# Writes in DIR: grid.json (the sweep's grid), study.jsonl (one line per point), study.csv (one row
# per point: model, system, nvs, gpus, strategy, compat, status, best throughput, iteration time,
# memory, layout, time breakdown), best.csv (the best strategy of every model, compat, system, domain
# and GPU count), nofit.csv (the model, system, domain, GPU count and compat where no strategy
# fits), scaling-MODEL-COMPAT.png (best throughput against GPU count, one panel per system and domain
# size, one curve per strategy: the paper's strong-scaling figures; a strategy's GPU counts where no
# layout fits marked along the panel's foot), breakdown-MODEL-COMPAT.png (the time breakdown of the
# best layout; GPU counts where nothing fits drawn as hatched "does not fit" bars), plots.gp, and
# times.txt (the wall times).
# Check: every stored result of tests/data/search-outputs.csv (the rank-0 throughput of each of its
# 477 groups, and the rest of the top 10) must be reproduced to 1e-9; exit 1 otherwise.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
}

out=build/paper-study
build=build
np=auto
resume=0
plots_only=0
while (($# > 0)); do
    case $1 in
    --out) out=${2:?--out needs a directory} && shift ;;
    --np) np=${2:?--np needs a number} && shift ;;
    --build) build=${2:?--build needs a directory} && shift ;;
    --resume) resume=1 ;;
    --plots-only) plots_only=1 ;;
    -h | --help) usage && exit 0 ;;
    *) echo "paper-study: unknown argument: $1" >&2 && usage >&2 && exit 2 ;;
    esac
    shift
done
if [[ $np != auto && ! $np =~ ^[0-9]+$ ]]; then
    echo "paper-study: --np: '$np' is not a number" >&2
    exit 2
fi

log() {
    printf '[paper-study] %s\n' "$*" >&2
}

now() {
    date +%s.%N
}

elapsed() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'
}

check_rc=0
if ((plots_only)); then
    for f in study.csv best.csv; do
        if [[ ! -f $out/$f ]]; then
            echo "paper-study: --plots-only: $out/$f: no such file; allowed: a directory of an earlier run" >&2
            exit 2
        fi
    done
else
# ---- build ----------------------------------------------------------------------------------------
if [[ ! -f $build/CMakeCache.txt ]]; then
    log "configure: cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release"
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >&2
fi
log "build: stepsim, study_report"
cmake --build "$build" --target stepsim study_report --parallel "$(nproc 2>/dev/null || echo 2)" >&2
stepsim=$build/stepsim
report=$build/study_report
mkdir -p "$out"

if [[ $np == auto ]]; then
    np=0
    # grep without -q reads all of ldd's output: with pipefail, -q could fail the pipe (SIGPIPE).
    if command -v mpirun >/dev/null 2>&1 && ldd "$stepsim" 2>/dev/null | grep libmpi >/dev/null; then
        np=2
    fi
fi

# ---- the grid -------------------------------------------------------------------------------------
cat >"$out/grid.json" <<'EOF'
{
  "name": "arXiv 2410.00273 design-space study",
  "description": "best layouts per strategy: 2 models x 3 systems x 3 NVLink domain sizes x 13 GPU counts x 3 strategies x 2 compat modes",
  "command": "search",
  "scenario": {"global_batch": 4096},
  "vary": {
    "model": ["gpt3_1T", "vit_era5"],
    "compat": ["reference", "corrected"],
    "system": ["A100", "H200", "B200"],
    "nvlink_size": [4, 8, 64],
    "parallel.strategy": ["1d", "2d", "2d-seqp"],
    "gpus": [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
  },
  "options": {"top": 10}
}
EOF

# ---- the sweeps -----------------------------------------------------------------------------------
: >"$out/times.txt"
mode=--force
((resume)) && mode=--resume
log "serial: $stepsim sweep $out/grid.json --out $out/study.jsonl $mode"
t0=$(now)
"$stepsim" sweep "$out/grid.json" --out "$out/study.jsonl" "$mode" --progress
t1=$(now)
serial_s=$(elapsed "$t0" "$t1")
echo "serial: $serial_s s wall for the whole study (1 process, $(nproc) cores)" | tee -a "$out/times.txt"

if ((np > 0)); then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    log "MPI: mpirun -np $np --oversubscribe $stepsim sweep $out/grid.json --out $out/study-mpi.jsonl --force"
    t0=$(now)
    mpirun -np "$np" --oversubscribe "$stepsim" sweep "$out/grid.json" --out "$out/study-mpi.jsonl" --force
    t1=$(now)
    mpi_s=$(elapsed "$t0" "$t1")
    echo "mpirun -np $np: $mpi_s s wall for the whole study (MPI start-up included)" | tee -a "$out/times.txt"
    if cmp -s <(sort "$out/study.jsonl") <(sort "$out/study-mpi.jsonl"); then
        echo "mpirun -np $np: the same $(wc -l <"$out/study-mpi.jsonl") lines as the serial run" | tee -a "$out/times.txt"
    else
        echo "paper-study: FAIL: the MPI run's lines differ from the serial run's" >&2
        exit 1
    fi
else
    log "MPI: skipped (no mpirun, stepsim built without MPI, or --np 0)"
fi

# ---- tables and the check -------------------------------------------------------------------------
"$report" "$out/study.jsonl" --csv "$out/study.csv" --best "$out/best.csv" \
    --check tests/data/search-outputs.csv | tee "$out/check.txt" || check_rc=$?
fi

# ---- where nothing fits ---------------------------------------------------------------------------
# study.csv: model,system,nvs,gpus,strategy,compat,status,...; a point where every strategy's status is
# no-fit is one where nothing fits (columns as best.csv's first five: model,system,nvs,gpus,compat)
awk -F, 'NR > 1 { k = $1 "," $2 "," $3 "," $4 "," $6; n[k]++; if ($7 == "no-fit") nf[k]++; if (!(k in o)) { o[k] = ++m; key[m] = k } }
    END { print "model,system,nvs,gpus,compat"; for (i = 1; i <= m; i++) if (nf[key[i]] == n[key[i]]) print key[i] }' \
    "$out/study.csv" >"$out/nofit.csv"
log "does not fit: $(($(wc -l <"$out/nofit.csv") - 1)) points where no strategy fits (nofit.csv)"

# ---- plots ----------------------------------------------------------------------------------------
have_gnuplot=1
command -v gnuplot >/dev/null 2>&1 || have_gnuplot=0
terminal=pngcairo
if ((have_gnuplot)) && ! gnuplot -e "set terminal pngcairo" >/dev/null 2>&1; then
    terminal=png # gnuplot without cairo: the libgd terminal
fi

{
    echo "# generated by tools/paper-study.sh: the study's figures from study.csv and best.csv"
    echo "set terminal $terminal noenhanced size 1500,1150 font ',10'"
    echo "set datafile separator comma"
    echo "set grid"
    echo 'sel(m, c, s, n) = strcol(1) eq m && strcol(compatcol) eq c && strcol(2) eq s && column(3) == n'
    for model in gpt3_1T vit_era5; do
        for compat in reference corrected; do
            cat <<EOF

# best throughput of each strategy against the GPU count
set output '$out/scaling-$model-$compat.png'
compatcol = 6
set multiplot layout 3,3 title "$model, compat $compat: throughput of the best layout of each strategy (global batch 4096)"
set logscale x 2
set logscale y
set xrange [3:23000]
set format x '%g'
set xlabel 'GPUs'
set ylabel 'samples/s'
set key inside top left
# a strategy's GPU counts where no layout fits: crosses along the foot of the panel (right axis 0..1)
set y2range [0:1]
unset y2tics
do for [n in "4 8 64"] {
    do for [s in "A100 H200 B200"] {
        set title sprintf('%s, NVLink domains of %s', s, n)
        plot for [i=1:3] '$out/study.csv' skip 1 \\
            using (sel("$model", "$compat", s, n + 0) && strcol(5) eq word("1d 2d 2d-seqp", i) ? column(4) : NaN):(column(8)) \\
            with linespoints pt 7 ps 0.6 lc i title word("1d 2d 2d-seqp", i), \\
            for [i=1:3] '$out/study.csv' skip 1 \\
            using (sel("$model", "$compat", s, n + 0) && strcol(5) eq word("1d 2d 2d-seqp", i) && strcol(7) eq "no-fit" ? column(4) : NaN):(0.02 + 0.035 * i) \\
            axes x1y2 with points pt 2 ps 1.2 lc i title word("1d 2d 2d-seqp", i) . ': does not fit'
    }
}
unset multiplot
unset logscale
set y2range [*:*]

# time breakdown of the best layout (over the three strategies), as shares of the iteration
set output '$out/breakdown-$model-$compat.png'
compatcol = 5
set multiplot layout 3,3 title "$model, compat $compat: time breakdown of the best layout (share of the iteration)"
set xrange [1.3:14.7]
set yrange [0:1]
set format x '%g'
set xtics ('4' 2, '16' 4, '64' 6, '256' 8, '1k' 10, '4k' 12, '16k' 14)
set xlabel 'GPUs'
set ylabel 'share of iteration time'
set style fill solid 0.9 noborder
set boxwidth 0.8
set key outside right top
do for [n in "4 8 64"] {
    do for [s in "A100 H200 B200"] {
        set title sprintf('%s, NVLink domains of %s', s, n)
        plot for [k=15:10:-1] '$out/best.csv' skip 1 \\
            using (sel("$model", "$compat", s, n + 0) ? log(column(4)) / log(2) : NaN):(sum [j=10:k] column(j) / column(8)) \\
            with boxes lc k - 9 title word("compute memory tp-comm pp-comm dp-comm bubble", k - 9), \\
            '$out/nofit.csv' skip 1 using (sel("$model", "$compat", s, n + 0) ? log(column(4)) / log(2) : NaN):(1) \\
            with boxes fs pattern 4 border lc rgb 'gray40' lc rgb 'gray40' title 'does not fit', \\
            '' skip 1 using (sel("$model", "$compat", s, n + 0) ? log(column(4)) / log(2) : NaN):(0.5):("does not fit") \\
            with labels rotate by 90 font ',8' notitle
    }
}
unset multiplot
unset xtics
set xtics
set yrange [*:*]
EOF
        done
    done
} >"$out/plots.gp"
if ((!have_gnuplot)); then
    log "plots: skipped: gnuplot is not installed (Debian package gnuplot-nox); the CSV files and plots.gp are written"
    exit "$check_rc"
fi
if gnuplot "$out/plots.gp" 2>"$out/gnuplot.log"; then
    log "plots: $(find "$out" -maxdepth 1 -name "*.png" | wc -l) PNG files ($terminal) in $out"
else
    log "plots: gnuplot failed, see $out/gnuplot.log"
    exit 1
fi
exit "$check_rc"
