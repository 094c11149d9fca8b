#!/usr/bin/env python3
"""check_et.py - read Chakra ETs written by stepsim with Chakra's Python protobuf bindings and check
them against the workload they were written from.

Usage: check_et.py PYDIR PREFIX
  PYDIR   directory holding et_def_pb2.py (protoc --python_out of traces/chakra/et_def.proto)
  PREFIX  PREFIX.<rank>.et are the files; PREFIX.expect lists "rank id type deps..." per node and
          PREFIX.comm_group.json the process groups (both written by chakra_sample_write)

Each file is read the way Chakra's feeder and protolib.decodeMessage read it: a varint length, then
a GlobalMetadata message; then a varint length and a Node message, to the end. Checked: node counts
per rank, ids, types and dependencies (data_deps; no ctrl_deps); every attribute ASTRA-sim's
workload layer reads, with the value kind Chakra's feeder takes it from (is_cpu_op bool false;
num_ops int64; tensor_size uint64; comm_type, comm_size int64; comm_src, comm_dst, comm_tag int32;
pg_name a string naming a group of PREFIX.comm_group.json that holds the rank); sends and receives
pair up by (src, dst, tag); dependencies name nodes of the same file. Exit 0 when all hold, 1 with
the first difference, 77 (ctest's skip) when Python's protobuf module is missing.
"""
import json
import os
import sys

try:
    from google.protobuf.internal.decoder import _DecodeVarint32
except ImportError:
    print("SKIP: python3 protobuf module missing (Debian python3-protobuf)")
    sys.exit(77)


def fail(msg):
    print("check_et.py: " + msg)
    sys.exit(1)


def read_et(path, pb):
    with open(path, "rb") as f:
        data = f.read()
    pos, records = 0, []
    while pos < len(data):
        n, pos = _DecodeVarint32(data, pos)
        msg = pb.GlobalMetadata() if not records else pb.Node()
        msg.ParseFromString(data[pos:pos + n])
        pos += n
        records.append(msg)
    if pos != len(data):
        fail(f"{path}: trailing bytes")
    if not records:
        fail(f"{path}: no GlobalMetadata")
    return records[0], records[1:]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    sys.path.insert(0, sys.argv[1])
    import et_def_pb2 as pb
    prefix = sys.argv[2]
    expect = {}
    with open(prefix + ".expect") as f:
        for line in f:
            v = [int(x) for x in line.split()]
            expect.setdefault(v[0], []).append((v[1], v[2], v[3:]))
    with open(prefix + ".comm_group.json") as f:
        groups = {k: v for k, v in json.load(f).items()}
    kinds = {"is_cpu_op": "bool_val", "num_ops": "int64_val", "tensor_size": "uint64_val",
             "comm_type": "int64_val", "comm_size": "int64_val", "comm_src": "int32_val",
             "comm_dst": "int32_val", "comm_tag": "int32_val", "pg_name": "string_val",
             "stepsim_duration_s": "double_val"}
    sends, recvs, n_nodes = [], [], 0
    for rank in sorted(expect):
        path = f"{prefix}.{rank}.et"
        meta, nodes = read_et(path, pb)
        if meta.version != "0.0.4":
            fail(f"{path}: version {meta.version!r}")
        want = expect[rank]
        if len(nodes) != len(want):
            fail(f"{path}: {len(nodes)} nodes, expected {len(want)}")
        ids = {n.id for n in nodes}
        for n, (wid, wtype, wdeps) in zip(nodes, want):
            if (n.id, n.type, list(n.data_deps)) != (wid, wtype, wdeps) or len(n.ctrl_deps):
                fail(f"{path}: node {n.id} type {n.type} deps {list(n.data_deps)} "
                     f"ctrl {list(n.ctrl_deps)}, expected {wid} {wtype} {wdeps}")
            for d in n.data_deps:
                if d not in ids:
                    fail(f"{path}: node {n.id}: dependency {d} not in the file")
            attrs = {}
            for a in n.attr:
                if a.name in kinds and a.WhichOneof("value") != kinds[a.name]:
                    fail(f"{path}: node {n.id}: {a.name} is {a.WhichOneof('value')}, the feeder reads {kinds[a.name]}")
                attrs[a.name] = getattr(a, a.WhichOneof("value"))
            if attrs.get("is_cpu_op", None) is not False:
                fail(f"{path}: node {n.id}: is_cpu_op is not false")
            if n.type == pb.COMP_NODE:
                if "stepsim_duration_s" in attrs:
                    if round(attrs["stepsim_duration_s"] * 1e6) != n.duration_micros:
                        fail(f"{path}: node {n.id}: duration_micros {n.duration_micros} vs "
                             f"{attrs['stepsim_duration_s']} s")
                elif n.duration_micros != 0 or attrs.get("num_ops", 0) <= 0:
                    fail(f"{path}: node {n.id}: no duration and no num_ops")
            elif n.type == pb.COMM_COLL_NODE:
                if "comm_type" not in attrs or "comm_size" not in attrs:
                    fail(f"{path}: node {n.id}: comm_type or comm_size missing")
                pg = attrs.get("pg_name", "")
                if pg and rank not in groups.get(pg, []):
                    fail(f"{path}: node {n.id}: pg_name {pg!r} is not a group of rank {rank}")
            else:
                src, dst, tag = attrs["comm_src"], attrs["comm_dst"], attrs["comm_tag"]
                mine = src if n.type == pb.COMM_SEND_NODE else dst
                if mine != rank:
                    fail(f"{path}: node {n.id}: comm_src/comm_dst do not name this rank")
                (sends if n.type == pb.COMM_SEND_NODE else recvs).append((src, dst, tag, attrs["comm_size"]))
            n_nodes += 1
    if sorted(sends) != sorted(recvs):
        fail(f"sends {sorted(sends)} do not pair with receives {sorted(recvs)}")
    print(f"check_et.py: {len(expect)} ranks, {n_nodes} nodes, {len(sends)} send/receive pairs, "
          f"{len(groups)} groups: as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
