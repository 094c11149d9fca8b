#!/bin/sh
# workload_roundtrip.sh [STEPSIM] [-- RUN OPTIONS...]: a step exported as Chakra execution traces
# (stepsim run ... --collapse off --export-et DIR) and imported again (stepsim run --workload DIR):
# prints both step times and their relative difference, the nodes, each run's wall time and peak
# resident set (/usr/bin/time), the traces' size on disk and the import's nodes per second. Default
# options: the built-in job (gpt3_1T, tp 8, pp 32, dp 16 on 4,096 GPUs) with global batch 512 (32
# microbatches, 8.9 million operations). The full default job (`-- --gbs 4096`, 71 million operations)
# writes 8.9 GB of traces; its import holds the step and one rank at a time (docs/workloads.md, "At
# scale"). MAX_MEMORY=GB in the environment passes --max-memory GB to the import.
# A benchmark, not a test: it fails only when a run fails or the step times differ by more than 1e-9.
set -eu
STEPSIM=${1:-build/stepsim}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
[ $# -eq 0 ] && set -- --gbs 512
DIR=$(mktemp -d "${TMPDIR:-/tmp}/stepsim_roundtrip_XXXXXX")
trap 'rm -rf "$DIR"' EXIT
/usr/bin/time -f "%e %M" -o "$DIR/t1" "$STEPSIM" run "$@" --collapse off --export-et "$DIR/et" --quiet --json \
    > "$DIR/a.json"
/usr/bin/time -f "%e %M" -o "$DIR/t2" "$STEPSIM" run --workload "$DIR/et" ${MAX_MEMORY:+--max-memory "$MAX_MEMORY"} \
    --quiet --json > "$DIR/b.json"
python3 - "$DIR" "$*" <<'PY'
import json, os, sys
d, opts = sys.argv[1], sys.argv[2]
a = json.load(open(os.path.join(d, "a.json")))
b = json.load(open(os.path.join(d, "b.json")))
t1 = open(os.path.join(d, "t1")).read().split()
t2 = open(os.path.join(d, "t2")).read().split()
disk = sum(os.path.getsize(os.path.join(d, "et", f)) for f in os.listdir(os.path.join(d, "et")))
ta, tb = a["step_time_s"], b["step_time_s"]
rel = abs(ta - tb) / ta
n = b["workload"]["nodes"]
print(f"stepsim run {opts} --collapse off --export-et DIR; stepsim run --workload DIR")
print(f"  ranks {b['workload']['ranks']}, nodes {n}, traces on disk {disk / 1e6:.1f} MB")
print(f"  step time: simulated {ta:.9f} s, exported and imported {tb:.9f} s, relative difference {rel:.3g}")
print(f"  run + export: {float(t1[0]):.2f} s wall, {int(t1[1]) / 1024:.0f} MiB peak")
print(f"  import + run: {float(t2[0]):.2f} s wall, {int(t2[1]) / 1024:.0f} MiB peak, "
      f"{n / float(t2[0]) / 1e6:.2f} M nodes/s end to end ({b['wall_time_s']:.2f} s of it in stepsim's wall time)")
sys.exit(0 if rel <= 1e-9 else 1)
PY
