#!/usr/bin/env python3
"""Merges the per-rank Chrome traces of a ruCCL job into one timeline.

Each rank writes its own trace.json (RUCCL_TRACE_FILE=trace.%r.json, docs/observability.md): one
process per rank (pid = rank), a "collectives" track and a "training" track, timestamps in
wall-clock microseconds. This puts them into one file that chrome://tracing or ui.perfetto.dev
opens as one timeline, shifted so that the job starts at 0, and prints a summary: per rank the
time spent in collectives and in each training phase, and the calls whose ranks arrived furthest
apart (the rank that came last is the one the others waited for).

    tools/merge_traces.py -o merged.json trace.0.json trace.1.json
    tools/merge_traces.py -o merged.json --keep-time --quiet trace.*.json

Only the Python 3 standard library. Exit status 2 for a bad argument or file, with a message that
names the file and says what was expected.
"""
import argparse
import json
import sys
from collections import defaultdict


def fail(message):
    print(f"merge_traces: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    except OSError as e:
        fail(f"{path}: cannot read it: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path}: expected a JSON Chrome trace, got invalid JSON ({e.msg} at line {e.lineno})")
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        fail(f"{path}: expected a Chrome trace object with a traceEvents list, got "
             f"{type(trace).__name__}")
    rank = trace.get("otherData", {}).get("rank")
    if not isinstance(rank, int):
        fail(f"{path}: expected otherData.rank (a ruCCL trace), got {rank!r}")
    return trace, rank


def merge(paths, keep_time):
    traces = []
    seen = {}
    for path in paths:
        trace, rank = load(path)
        if rank in seen:
            fail(f"{path}: rank {rank} is already in {seen[rank]}; expected one file per rank")
        seen[rank] = path
        traces.append((rank, path, trace))
    traces.sort(key=lambda t: t[0])
    timed = [e for _, _, t in traces for e in t["traceEvents"] if e.get("ph") == "X"]
    origin = 0.0 if keep_time or not timed else min(e["ts"] for e in timed)
    metadata, events = [], []
    for rank, _, trace in traces:
        for e in trace["traceEvents"]:
            e = dict(e)
            e["pid"] = rank  # one process per rank, whatever the file said
            if e.get("ph") == "X":
                e["ts"] = round(e["ts"] - origin, 3)
                events.append(e)
            else:
                metadata.append(e)
    events.sort(key=lambda e: (e["ts"], e["pid"], e.get("tid", 0)))
    world = max((t.get("otherData", {}).get("world_size", 0) for _, _, t in traces), default=0)
    merged = {
        "displayTimeUnit": "ms",
        "otherData": {
            "ranks": [r for r, _, _ in traces],
            "world_size": world,
            "hosts": {str(r): t.get("otherData", {}).get("host", "") for r, _, t in traces},
            "origin_unix_us": origin,
            "sources": [p for _, p, _ in traces],
        },
        "traceEvents": metadata + events,
    }
    missing = sorted(set(range(world)) - set(seen))
    return merged, missing


def summary(merged, missing, out):
    events = [e for e in merged["traceEvents"] if e.get("ph") == "X"]
    busy = defaultdict(lambda: defaultdict(float))  # rank -> name -> us
    calls = defaultdict(dict)  # seq -> rank -> event
    for e in events:
        rank = e["pid"]
        if e.get("cat") == "collective":
            busy[rank]["collectives"] += e["dur"]
            seq = e.get("args", {}).get("seq")
            if seq is not None:
                calls[seq][rank] = e
        elif e.get("cat") == "point_to_point":
            busy[rank]["point to point"] += e["dur"]
        else:
            busy[rank][e["name"]] += e["dur"]
    print(f"{len(events)} events from ranks {merged['otherData']['ranks']}", file=out)
    if missing:
        print(f"no trace from rank(s) {missing} of world size "
              f"{merged['otherData']['world_size']}", file=out)
    for rank in sorted(busy):
        parts = ", ".join(f"{name} {us / 1e3:.3f} ms" for name, us in sorted(busy[rank].items()))
        print(f"rank {rank}: {parts}", file=out)
    spread = []
    for seq, by_rank in calls.items():
        if len(by_rank) < 2:
            continue
        last = max(by_rank.values(), key=lambda e: e["ts"])
        first = min(e["ts"] for e in by_rank.values())
        spread.append((last["ts"] - first, seq, last["name"], last["pid"]))
    spread.sort(reverse=True)
    if spread:
        print("calls whose ranks arrived furthest apart (the last one kept the others waiting):",
              file=out)
        for us, seq, name, rank in spread[:5]:
            print(f"  {name} #{seq}: rank {rank} arrived {us:.1f} us after the first", file=out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", help="the per-rank trace.json files")
    parser.add_argument("-o", "--output", required=True, help="the merged trace to write")
    parser.add_argument("--keep-time", action="store_true",
                        help="keep wall-clock timestamps (default: the job starts at 0)")
    parser.add_argument("--quiet", action="store_true", help="no summary")
    args = parser.parse_args(argv)
    merged, missing = merge(args.traces, args.keep_time)
    try:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(merged, f, separators=(",", ":"))
            f.write("\n")
    except OSError as e:
        fail(f"{args.output}: cannot write it: {e.strerror}")
    if not args.quiet:
        summary(merged, missing, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
