#!/bin/sh
# Re-runs the pasted `$ build/stepsim ...` blocks of the given Markdown files (default: README.md
# and docs/*.md) as from the repository root (in a scratch directory that links build, docs, tests
# and tools, so that files the commands write land there) and shows where the pasted output differs
# from what the command prints now. A pasted output may be an excerpt of the output (its first,
# last or middle lines); blocks abridged with "..." (in the command or the output) are skipped, and
# so are commands that need a file the repository does not hold. Wall times ("0.81 s wall", "in
# 0.15 s with") are not compared. Each command gets at most TIMEOUT seconds (default 60).
# Usage: tools/check-docs.sh [FILE.md ...]      exit 0: all checked blocks match, 1: some differ
set -u
cd "$(dirname "$0")/.." || exit 2
[ -x build/stepsim ] || { echo "check-docs: build/stepsim missing; build first" >&2; exit 2; }
timeout_s=${TIMEOUT:-60}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
root=$(pwd)
mkdir "$tmp/root" && for d in build docs tests tools; do ln -s "$root/$d" "$tmp/root/$d"; done
[ $# -gt 0 ] || set -- README.md docs/*.md
status=0
for md in "$@"; do
    rm -f "$tmp"/block.*
    # One block per `$ build/stepsim` line at 4-space indent: block.N.cmd (continuations joined)
    # and block.N.out (the lines after it, up to the next "$ " line or the end of the code block).
    awk -v dir="$tmp" '
        function flush() { if (n) close(dir "/block." n ".out") }
        /^    \$ / { inblk = 0 }
        /^    \$ build\/stepsim / {
            flush(); n++; cmd = substr($0, 7); line = NR
            while (cmd ~ /\\$/ && (getline nxt) > 0) { sub(/\\$/, "", cmd); sub(/^ +/, " ", nxt); cmd = cmd nxt }
            print cmd > (dir "/block." n ".cmd"); close(dir "/block." n ".cmd")
            print line > (dir "/block." n ".line"); close(dir "/block." n ".line")
            printf "" > (dir "/block." n ".out"); inblk = 1; blank = 0; next
        }
        inblk && /^$/ { blank++; next }
        inblk && /^    / { while (blank) { print "" > (dir "/block." n ".out"); blank-- } print substr($0, 5) > (dir "/block." n ".out"); next }
        inblk { inblk = 0 }
        END { flush() }' "$md"
    i=0
    while [ -e "$tmp/block.$((i + 1)).cmd" ]; do
        i=$((i + 1)); b=$tmp/block.$i; c=$b.cmd; line=$(cat "$b.line"); cmd=$(cat "$c")
        if grep -q '\.\.\.' "$c" "$b.out"; then continue; fi
        [ -s "$b.out" ] || continue
        wall='s/[0-9.]* s wall/X s wall/; s/in [0-9.]* s with/in X s with/'
        (cd "$tmp/root" && timeout "$timeout_s" sh -c "$cmd") >"$b.now" 2>&1
        rc=$?
        if [ $rc -eq 124 ]; then echo "$md:$line: skipped (over ${timeout_s} s): $cmd"; continue; fi
        if grep -q 'No such file\|cannot open\|cannot read' "$b.now"; then echo "$md:$line: skipped (needs a file): $cmd"; continue; fi
        sed "$wall" "$b.out" >"$b.a"; sed "$wall" "$b.now" >"$b.b"
        # The pasted lines must appear together, in order, somewhere in the output.
        if ! awk 'NR == FNR { a = a $0 "\n"; next } { b = b $0 "\n" } END { exit index(b, a) ? 0 : 1 }' "$b.a" "$b.b"; then
            echo "$md:$line: differs: $cmd"; diff "$b.a" "$b.b" | sed 's/^/    /'; status=1
        fi
    done
done
exit $status
