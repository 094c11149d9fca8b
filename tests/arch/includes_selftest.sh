#!/usr/bin/env bash
# includes_selftest.sh CHECKER FIXTURES - the include checker must reject each broken fixture tree,
# with the right reason, and accept the clean one (ctest arch.includes_selftest).
set -uo pipefail
checker=$1
fixtures=$2
failed=0

# expect TREE RC MESSAGE: the checker on FIXTURES/TREE exits RC and prints a line containing MESSAGE.
expect() {
    local tree=$1 want_rc=$2 want_msg=$3 out rc=0
    out=$("$checker" "$fixtures/$tree" 2>&1) || rc=$?
    if ((rc != want_rc)); then
        printf 'FAIL %s: exit %d, want %d\n%s\n' "$tree" "$rc" "$want_rc" "$out"
        failed=1
    elif ! grep -qF -- "$want_msg" <<<"$out"; then
        printf 'FAIL %s: no line with "%s" in\n%s\n' "$tree" "$want_msg" "$out"
        failed=1
    else
        printf 'ok   %s: exit %d, "%s"\n' "$tree" "$rc" "$want_msg"
    fi
}

# A cycle model -> sim -> model, and a longer one through sim's private core.
expect cycle 1 'include cycle across modules: model/include/model.h (model) -> sim/include/sim.h (sim) -> model/include/model.h (model)'
expect cycle 1 'include cycle across modules: sim/sim_core.h (sim) -> model/include/model.h (model)'
# A leaf including a layer above it.
expect upward 1 'topo/route.c:2: #include "sim.h" (sim/include/sim.h): topo may not use sim'
# Another module's internal header.
expect private 1 'sim/engine.c:3: #include "topo_internal.h" (topo/topo_internal.h): a private header of topo'
# A private header of the command line outside tools/stepsim (its public cli.h is fine).
expect cli_private 1 'tools/bench/bench.c:3: #include "scenario.h" (tools/stepsim/scenario/scenario.h): a private header of stepsim'
expect cli_private 1 '1 violation'
# A cycle inside one module, downward includes, a test reading its module's internals: accepted.
expect clean 0 '0 violations'
# Bad usage.
expect no-such-tree 2 'is not a directory'
exit "$failed"
