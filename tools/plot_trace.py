#!/usr/bin/env python3
"""Renders a (merged) ruCCL Chrome trace as a PNG timeline with gnuplot.

A browser shows the trace best (chrome://tracing or ui.perfetto.dev open the JSON itself); this
is for machines without one, and for docs: every rank gets two rows, its collectives and its
training phases, each event a box coloured by its name, with a legend.

    tools/plot_trace.py merged.json timeline.png [--from MS] [--to MS] [--title TEXT]

--from/--to cut a window out of the timeline (milliseconds of the trace's own time: a merged
trace starts at 0). Needs gnuplot (Debian: apt-get install gnuplot-nox).
"""
import argparse
import json
import shutil
import subprocess
import sys


def fail(message):
    print(f"plot_trace: {message}", file=sys.stderr)
    sys.exit(2)


def window_ms(events, start=None, end=None):
    """The time window to draw, in milliseconds from the first event: [start, end], by default
    from 0 to the end of the last event. Chrome trace times ("ts", "dur") are microseconds."""
    origin = min(e["ts"] for e in events)
    start = start if start is not None else 0.0
    end = end if end is not None else (max(e["ts"] + e["dur"] for e in events) - origin) / 1e3
    return origin, start, end


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("png")
    parser.add_argument("--from", dest="start", type=float, default=None)
    parser.add_argument("--to", dest="end", type=float, default=None)
    parser.add_argument("--title", default="ruCCL trace")
    args = parser.parse_args(argv)
    if shutil.which("gnuplot") is None:
        fail("gnuplot is not installed; on Debian: apt-get install gnuplot-nox")
    try:
        with open(args.trace, encoding="utf-8") as f:
            trace = json.load(f)
        events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{args.trace}: expected a Chrome trace with traceEvents, got an error: {e}")
    if not events:
        fail(f"{args.trace}: expected timed (\"X\") events, got none")
    origin, start, end = window_ms(events, args.start, args.end)
    ranks = sorted({e["pid"] for e in events})
    names = []
    rows = []
    # Nesting depth per row (a step holds its phases): deeper boxes are thinner, so the
    # enclosing one shows around them.
    depth = {}
    open_until = {}
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        key = (e["pid"], e.get("tid", 1))
        stack = [t for t in open_until.get(key, []) if t > e["ts"]]
        depth[id(e)] = len(stack)
        stack.append(e["ts"] + e["dur"])
        open_until[key] = stack
    for e in events:
        t0 = (e["ts"] - origin) / 1e3
        t1 = t0 + e["dur"] / 1e3
        if t1 < start or t0 > end:
            continue
        t0, t1 = max(t0, start), min(t1, end)
        if e["name"] not in names:
            names.append(e["name"])
        track = 0 if e.get("tid", 1) == 1 else 1
        y = 2 * ranks.index(e["pid"]) + track
        # a box at least 0.1 % of the window wide, so a microsecond call still shows
        half = max((t1 - t0) / 2, (end - start) / 2000)
        height = max(0.12, 0.40 - 0.09 * depth[id(e)])
        rows.append(f"{(t0 + t1) / 2:.6f} {y} {half:.6f} {height:.2f} "
                    f"{names.index(e['name']) + 1}")
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf"]
    ytics = ", ".join(f'"rank {r} collectives" {2 * i}, "rank {r} training" {2 * i + 1}'
                      for i, r in enumerate(ranks))
    script = [
        "set terminal pngcairo size 1400,{} font ',10'".format(160 + 70 * len(ranks)),
        f"set output '{args.png}'",
        f"set title '{args.title}' noenhanced",
        "set xlabel 'time (ms)'",
        f"set xrange [{start}:{end}]",
        f"set yrange [-0.7:{2 * len(ranks) - 0.3}]",
        f"set ytics ({ytics})",
        "set grid xtics",
        "set key outside right top noenhanced",
        "set style fill solid 1.0 noborder",
    ]
    for i, colour in enumerate(palette):
        script.append(f"set linetype {i + 1} lc rgb '{colour}'")
    script.append(f"set linetype cycle {len(palette)}")
    plots = ["'-' using 1:2:3:4:5 with boxxyerror lc variable notitle"]
    for i, name in enumerate(names):
        plots.append(f"NaN with boxes lt {i % len(palette) + 1} title '{name}'")
    script.append("plot " + ", ".join(plots))
    script.extend(rows)
    script.append("e")
    run = subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True,
                         capture_output=True)
    if run.returncode != 0:
        fail(f"gnuplot failed: {run.stderr.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
