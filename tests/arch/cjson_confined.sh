#!/bin/sh
# cjson_confined.sh ROOT: cJSON appears only where JSON is read or written. Loaders: the scenario
# files, presets, topology objects and --topologies lists (tools/stepsim/scenario/), the sweep grid
# and journal (tools/stepsim/sweep/), the Chrome trace writer's check of the scenario it embeds
# (traces/), the report programs reading stepsim's --json (tools/reports/). Printers:
# tools/stepsim/output/. Every other .c or .h under model/ topo/ sim/ traces/ tools/ that mentions
# cJSON is listed and the test fails: the commands (tools/stepsim/commands/) compute typed results
# and never build JSON themselves.
root=${1:-.}
cd "$root" || exit 2
bad=$(grep -rl cJSON --include='*.c' --include='*.h' model topo sim traces tools |
    grep -vE '^(tools/stepsim/(scenario|sweep|output)/|traces/|tools/reports/)')
if [ -n "$bad" ]; then
    echo "arch.cjson: cJSON outside the loaders and printers:"
    echo "$bad" | sed 's/^/  /'
    exit 1
fi
echo "arch.cjson: cJSON only in the loaders and printers"
