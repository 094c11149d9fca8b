#!/usr/bin/env python3
"""trace_diff.py A.json B.json - compare two Chrome traces of stepsim run (a step and the same step
exported with --export-et and imported again with --workload): the slices (begin/end), arrows and
link counters event by event in file order, and say exactly what differs (names, arguments, memory
counters, metadata). Exit 0 when the timelines (phase, process, thread, time of every slice, arrow
and link counter) are identical, 1 otherwise."""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    key = lambda e: (e["ph"], e.get("pid"), e.get("tid"), e.get("ts"), e.get("dur"))
    sa = [e for e in a if e["ph"] in "BEXsf"]
    sb = [e for e in b if e["ph"] in "BEXsf"]
    ca = [e for e in a if e["ph"] == "C" and "memory" not in e["name"]]
    cb = [e for e in b if e["ph"] == "C" and "memory" not in e["name"]]
    ma = sum(1 for e in a if e["ph"] == "C" and "memory" in e["name"])
    mb = sum(1 for e in b if e["ph"] == "C" and "memory" in e["name"])
    same_slices = len(sa) == len(sb) and all(key(x) == key(y) for x, y in zip(sa, sb))
    same_counters = ca == cb
    print(f"slices and arrows: {len(sa)} and {len(sb)}, timelines {'identical' if same_slices else 'DIFFER'}")
    print(f"link counters: {len(ca)} and {len(cb)}, {'identical' if same_counters else 'DIFFER'}")
    print(f"memory counters: {ma} and {mb}")
    if len(sa) == len(sb):
        names = sum(1 for x, y in zip(sa, sb) if x.get("name") != y.get("name"))
        args = sum(1 for x, y in zip(sa, sb) if x.get("args") != y.get("args"))
        print(f"slices whose name differs: {names}; whose arguments differ: {args}")
        shown = 0
        for x, y in zip(sa, sb):
            if (x.get("name"), x.get("args")) != (y.get("name"), y.get("args")) and shown < 2:
                print("  A:", json.dumps(x))
                print("  B:", json.dumps(y))
                shown += 1
    meta = lambda ev: sorted(json.dumps(e, sort_keys=True) for e in ev if e["ph"] == "M")
    print(f"metadata (process and thread names): {'identical' if meta(a) == meta(b) else 'differ'}")
    return 0 if same_slices and same_counters else 1


if __name__ == "__main__":
    sys.exit(main())
