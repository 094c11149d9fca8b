#!/bin/sh
# workload_roundtrip.sh [STEPSIM] [-- RUN OPTIONS...]: a step exported as Chakra execution traces
# (stepsim run ... --collapse off --export-et DIR) and imported again (stepsim run --workload DIR),
# the import and the same step built from the model (stepsim run ... --collapse off) then run
# alternately REPEAT times each: prints every run's wall time (/usr/bin/time), the medians, the
# import's operations (nodes) per second at its median, the ratio of the two medians, the peak
# resident sets, the traces' size on disk, and the step times with their largest relative
# difference. Default options: the built-in job (gpt3_1T, tp 8, pp 32, dp 16 on 4,096 GPUs) with
# global batch 512 (32 microbatches, 8.9 million operations). The full default job (`-- --gbs 4096`,
# 71 million operations) writes 8.9 GB of traces; its import holds the step and one rank at a time
# (docs/workloads.md, "At scale"). Environment: REPEAT=N (default 1); ET=DIR imports an existing
# export of the same options instead of exporting anew; MAX_MEMORY=GB passes --max-memory GB to the
# import. The machine is shared and noisy: quote the medians, measured in one run of this script.
# A benchmark, not a test: it fails only when a run fails or the step times differ by more than 1e-9.
set -eu
STEPSIM=${1:-build/stepsim}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
[ $# -eq 0 ] && set -- --gbs 512
REPEAT=${REPEAT:-1}
case $REPEAT in '' | *[!0-9]* | 0) echo "workload_roundtrip.sh: REPEAT=$REPEAT; allowed: 1 or more" >&2; exit 2 ;; esac
DIR=$(mktemp -d "${TMPDIR:-/tmp}/stepsim_roundtrip_XXXXXX")
trap 'rm -rf "$DIR"' EXIT
if [ -n "${ET:-}" ]; then
    [ -d "$ET" ] || { echo "workload_roundtrip.sh: ET=$ET: not a directory" >&2; exit 2; }
    SET=$ET
else
    SET=$DIR/et
    /usr/bin/time -f "%e %M" -o "$DIR/export.t" "$STEPSIM" run "$@" --collapse off --export-et "$SET" \
        --quiet --json > "$DIR/export.json"
fi
i=1
while [ "$i" -le "$REPEAT" ]; do
    /usr/bin/time -f "%e %M" -o "$DIR/import$i.t" "$STEPSIM" run --workload "$SET" \
        ${MAX_MEMORY:+--max-memory "$MAX_MEMORY"} --quiet --json > "$DIR/import$i.json"
    /usr/bin/time -f "%e %M" -o "$DIR/model$i.t" "$STEPSIM" run "$@" --collapse off --quiet --json \
        > "$DIR/model$i.json"
    i=$((i + 1))
done
python3 - "$DIR" "$SET" "$REPEAT" "$*" <<'PY'
import json, os, statistics, sys
d, et, repeat, opts = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def load(name):
    return json.load(open(os.path.join(d, name + ".json"))), open(os.path.join(d, name + ".t")).read().split()
imports = [load(f"import{i}") for i in range(1, repeat + 1)]
models = [load(f"model{i}") for i in range(1, repeat + 1)]
disk = sum(os.path.getsize(os.path.join(et, f)) for f in os.listdir(et))
n = imports[0][0]["workload"]["nodes"]
print(f"stepsim run {opts} --collapse off --export-et DIR; stepsim run --workload DIR; "
      f"stepsim run {opts} --collapse off (alternately, {repeat} each)")
print(f"  ranks {imports[0][0]['workload']['ranks']}, nodes {n}, traces on disk {disk / 1e6:.1f} MB")
if os.path.exists(os.path.join(d, "export.t")):
    e, t = load("export")
    print(f"  run + export: {float(t[0]):.2f} s wall, {int(t[1]) / 1024:.0f} MiB peak")
times = [r[0]["step_time_s"] for r in imports + models]
ref = models[0][0]["step_time_s"]
rel = max(abs(t - ref) / ref for t in times)
print(f"  step time: {ref:.9f} s (model), {imports[0][0]['step_time_s']:.9f} s (import); "
      f"largest relative difference over all runs {rel:.3g}")
wi = [float(r[1][0]) for r in imports]
wm = [float(r[1][0]) for r in models]
mi, mm = statistics.median(wi), statistics.median(wm)
print(f"  import + run: {', '.join(f'{w:.2f}' for w in wi)} s; median {mi:.2f} s = "
      f"{n / mi / 1e6:.2f} M operations/s end to end; peak {max(int(r[1][1]) for r in imports) / 1024:.0f} MiB")
print(f"  the step from the model: {', '.join(f'{w:.2f}' for w in wm)} s; median {mm:.2f} s = "
      f"{n / mm / 1e6:.2f} M operations/s; peak {max(int(r[1][1]) for r in models) / 1024:.0f} MiB")
print(f"  import / model (medians): {mi / mm:.2f}")
sys.exit(0 if rel <= 1e-9 else 1)
PY
