#!/usr/bin/env bash
# gen_astra_microbench.sh - regenerate the ASTRA-sim microbenchmark ETs of tests/data/chakra/astra-sim
# by running ASTRA-sim's own generator scripts, unmodified, against our copy of Chakra's schema.
#
# Usage: tests/chakra/gen_astra_microbench.sh ASTRA_SIM_CHECKOUT [OUT_DIR]
#   ASTRA_SIM_CHECKOUT  a checkout of https://github.com/astra-sim/astra-sim (the fixtures were made
#                       at commit 518bd513ae110428cd62eb60efc0f3993fd53c70)
#   OUT_DIR             default tests/data/chakra/astra-sim
# Needs python3 with protobuf (Debian python3-protobuf) and protoc (Debian protobuf-compiler).
#
# The scripts import Chakra's Python bindings as extern.graph_frontend.chakra.schema.protobuf.et_def_pb2
# and its length-delimited writer as extern.graph_frontend.chakra.src.third_party.utils.protolib
# (ASTRA-sim's Chakra submodule). This script provides both in a temporary directory: et_def_pb2.py
# from traces/chakra/et_def.proto (protoc --python_out) and a protolib.encodeMessage that writes the
# message's varint length and then the message, which is what Chakra's protolib does.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
astra=${1:?usage: gen_astra_microbench.sh ASTRA_SIM_CHECKOUT [OUT_DIR]}
astra=$(cd "$astra" && pwd)
out=${2:-$root/tests/data/chakra/astra-sim}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON3:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pb=$tmp/extern/graph_frontend/chakra/schema/protobuf
lib=$tmp/extern/graph_frontend/chakra/src/third_party/utils
mkdir -p "$pb" "$lib"
protoc --python_out="$pb" -I"$root/traces/chakra" et_def.proto
cat >"$lib/protolib.py" <<'PY'
from google.protobuf.internal.encoder import _VarintBytes


def encodeMessage(out, message):
    data = message.SerializeToString()
    out.write(_VarintBytes(len(data)))
    out.write(data)
PY
gen=$astra/examples/workload/microbenchmarks/generator_scripts
cd "$tmp"
# all_reduce of 1 GiB (--coll-size is in MiB) on 8 and 64 ranks
for npus in 8 64; do
    PYTHONPATH=$tmp "$py" "$gen/all_reduce.py" --npus-count "$npus" --coll-size 1024
done
rm -rf "$out/all_reduce"
cp -r "$tmp/all_reduce" "$out/"
echo "wrote $(find "$out/all_reduce" -name '*.et' | wc -l) files under $out/all_reduce"
