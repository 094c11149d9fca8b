#!/usr/bin/env bash
# check-includes.sh - check the file-level #include graph of the layers against their direction.
#
# Usage: tools/check-includes.sh [--graph] [ROOT]
#   ROOT     the tree to check (default: this repository); tests/arch/includes_selftest.sh runs it
#            on small fixture trees that must be rejected
#   --graph  also print the module-level include counts ("sim -> model: 3")
#
# Files: every .c and .h under ROOT's alloc/ model/ topo/ sim/ traces/ tools/ tests/ (tests/arch/fixtures
# excluded). An #include "x.h" (or <x.h>) names a project file when one ends in /x.h: first beside
# the including file, else the one file of that name (the one in the includer's module if several).
# Anything else is a system or third-party header and is ignored.
#
# Modules, by path: alloc/ (alloc), model/ (model), topo/ (topo), sim/step/ (step), sim/ (sim), traces/ (traces),
# tools/stepsim/ (stepsim), tools/common/ (common), the rest of tools/ (tools: bench, reports),
# tests/ (tests). A module's public headers are those in its include/ folder (all of tools/common);
# the others are private to it.
#
# Violations (each one line; exit 1 if any):
#   (a) a cycle of includes through files of more than one module (a cycle inside one module, its
#       private core, is allowed);
#   (b) an include of another module's private header; tests/<m>/ may include module m's private
#       headers (tests/topo/test_summary.c reads topo_internal.h), tests/fuzz/ stepsim's (the fuzz
#       targets call its loaders), tests/fuzz/fuzz_chakra.c traces' (the reader's entry point on
#       threads);
#   (c) an include of another module's public header against the layer direction:
#         alloc: a leaf (nothing); every other module may use alloc (the allocation wrappers)
#         model, topo, common: alloc only               sim: model, topo
#         step: sim, model, topo                    traces: sim, step
#         stepsim: every layer and common           tools: everything public, stepsim's cli.h included
#         tests: everything public
# Exit status: 0 clean, 1 violations, 2 bad usage. Needs only bash, find, sort and a POSIX awk.
set -euo pipefail

graph=0
root=
for arg in "$@"; do
    case $arg in
    --graph) graph=1 ;;
    -h | --help)
        awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    -*)
        echo "check-includes: unknown option: $arg" >&2
        exit 2
        ;;
    *)
        if [[ -n $root ]]; then
            echo "check-includes: more than one ROOT: $root, $arg" >&2
            exit 2
        fi
        root=$arg
        ;;
    esac
done
[[ -n $root ]] || root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ ! -d $root ]]; then
    echo "check-includes: ROOT: $root is not a directory" >&2
    exit 2
fi
cd "$root"

list=$(mktemp)
trap 'rm -f "$list"' EXIT
dirs=()
for d in alloc model topo sim traces tools tests; do
    [[ -d $d ]] && dirs+=("$d")
done
if ((${#dirs[@]} == 0)); then
    echo "check-includes: $root has none of model/ topo/ sim/ traces/ tools/ tests/" >&2
    exit 2
fi
find "${dirs[@]}" -path tests/arch/fixtures -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print |
    LC_ALL=C sort >"$list"

# shellcheck disable=SC2046 # one argument per file name (the tree has no spaces in file names)
LC_ALL=C awk -v graph="$graph" '
function module(p) {
    if (p ~ /^alloc\//) return "alloc"
    if (p ~ /^model\//) return "model"
    if (p ~ /^topo\//) return "topo"
    if (p ~ /^sim\/step\//) return "step"
    if (p ~ /^sim\//) return "sim"
    if (p ~ /^traces\//) return "traces"
    if (p ~ /^tools\/stepsim\//) return "stepsim"
    if (p ~ /^tools\/common\//) return "common"
    if (p ~ /^tools\//) return "tools"
    if (p ~ /^tests\//) return "tests"
    return "other"
}
function is_public(p) {
    return p ~ /\/include\/[^\/]*$/ || module(p) == "common"
}
# The module whose private headers a test folder may include: tests/<m>/...
function tested_module(p,    parts) {
    split(p, parts, "/")
    if (parts[2] == "sim" || parts[2] == "model" || parts[2] == "topo" || parts[2] == "traces" ||
        parts[2] == "step" || parts[2] == "stepsim")
        return parts[2]
    if (parts[2] == "fuzz")
        return parts[3] == "fuzz_chakra.c" ? "traces" : "stepsim"
    return ""
}
function dirname(p) {
    if (p !~ /\//) return ""
    sub(/\/[^\/]*$/, "", p)
    return p
}
# a/b/../c/./d -> a/c/d
function normalize(p,    parts, n, i, out, k, res) {
    n = split(p, parts, "/")
    k = 0
    for (i = 1; i <= n; i++) {
        if (parts[i] == "" || parts[i] == ".") continue
        if (parts[i] == ".." && k > 0 && out[k] != "..") { k--; continue }
        out[++k] = parts[i]
    }
    res = ""
    for (i = 1; i <= k; i++) res = res (i > 1 ? "/" : "") out[i]
    return res
}
function resolve(from, name,    d, cand, i, hits, first, same, n_same) {
    d = dirname(from)
    cand = normalize(d == "" ? name : d "/" name)
    if (cand in isfile) return cand
    hits = 0; n_same = 0
    for (i = 1; i <= nfiles; i++) {
        if (files[i] == name || substr(files[i], length(files[i]) - length(name)) == "/" name) {
            hits++
            if (hits == 1) first = files[i]
            if (module(files[i]) == module(from)) { n_same++; same = files[i] }
        }
    }
    if (hits == 1) return first
    if (hits > 1 && n_same == 1) return same
    if (hits > 1) {
        printf "check-includes: %s: #include \"%s\" is ambiguous (%d files); name it by its path\n", from, name, hits
        violations++
    }
    return ""
}
function violation(msg) {
    print "check-includes: " msg
    violations++
}
# Is there a path from a to b? Fills parent[] for path().
function reaches(a, b,    queue, head, tail, u, n, i, nb, seen) {
    split("", parent)
    head = 1; tail = 1; queue[1] = a; seen[a] = 1
    while (head <= tail) {
        u = queue[head++]
        if (u == b) return 1
        n = split(adj[u], nb, " ")
        for (i = 1; i <= n; i++) {
            if (nb[i] == "" || (nb[i] in seen)) continue
            seen[nb[i]] = 1
            parent[nb[i]] = u
            queue[++tail] = nb[i]
        }
    }
    return 0
}
BEGIN {
    allowed["alloc"] = " "
    allowed["model"] = " alloc "
    allowed["topo"] = " alloc "
    allowed["common"] = " alloc "
    allowed["sim"] = " alloc model topo "
    allowed["step"] = " alloc sim model topo "
    allowed["traces"] = " alloc sim step "
    allowed["stepsim"] = " alloc model topo sim step traces common "
    allowed["tools"] = " alloc model topo sim step traces common stepsim "
    allowed["tests"] = " alloc model topo sim step traces common stepsim "
}
NR == FNR { files[++nfiles] = $0; isfile[$0] = 1; next }
FNR == 1 { nfile_scanned++ }
/^[ \t]*#[ \t]*include[ \t]*["<]/ {
    line = $0
    sub(/^[ \t]*#[ \t]*include[ \t]*/, "", line)
    close_ch = substr(line, 1, 1) == "<" ? ">" : "\""
    line = substr(line, 2)
    end = index(line, close_ch)
    if (end == 0) next
    name = substr(line, 1, end - 1)
    to = resolve(FILENAME, name)
    if (to == "") next
    nincludes++
    from = FILENAME
    mf = module(from); mt = module(to)
    key = from SUBSEP to
    if (!(key in edge)) { edge[key] = 1; adj[from] = adj[from] " " to; edges_from[++nedges] = from; edges_to[nedges] = to }
    if (mf == mt) next
    ncross++
    modedge[mf " -> " mt]++
    where = from ":" FNR ": #include \"" name "\" (" to ")"
    if (!is_public(to)) {
        if (mf == "tests" && tested_module(from) == mt) next
        violation(where ": a private header of " mt "; only " mt " (and tests/" mt "/) may include it")
    } else if (index(allowed[mf], " " mt " ") == 0) {
        violation(where ": " mf " may not use " mt " (" mf " may use:" (allowed[mf] == " " ? " nothing, a leaf" : allowed[mf]) ")")
    }
}
END {
    # (a) cycles through more than one module: for each cross-module edge u -> v, a path v ->* u.
    for (e = 1; e <= nedges; e++) {
        u = edges_from[e]; v = edges_to[e]
        if (module(u) == module(v) || ((u SUBSEP v) in reported)) continue
        if (!reaches(v, u)) continue
        # the cycle u -> v -> ... -> u: parent[] leads from u back to v
        m = 0; w = u
        while (w != v) { back[++m] = w; w = parent[w] }
        msg = u " (" module(u) ") -> " v " (" module(v) ")"
        prev = v
        for (i = m; i >= 1; i--) {
            msg = msg " -> " back[i] " (" module(back[i]) ")"
            reported[prev SUBSEP back[i]] = 1
            prev = back[i]
        }
        reported[u SUBSEP v] = 1
        violation("include cycle across modules: " msg)
    }
    if (graph) {
        for (k in modedge) print k ": " modedge[k] | "LC_ALL=C sort"
        close("LC_ALL=C sort")
    }
    printf "check-includes: %d files, %d project includes (%d between modules), %d violation%s\n",
        nfile_scanned, nincludes, ncross, violations, violations == 1 ? "" : "s"
    exit violations > 0
}
' "$list" $(cat "$list")
