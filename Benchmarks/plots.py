#!/usr/bin/env python3
"""PNG plots of the benchmark results (matplotlib, Agg backend).

  plots.py e2e --csv results/e2e-<date>.csv [--events-dir DIR] [--out-prefix PREFIX]
      One PNG per scenario, <PREFIX>-throughput-<scenario>.png (PREFIX defaults
      to the CSV path without .csv): vfetch's throughput and bytes over time,
      from the `vfetch get --json` progress lines e2e.sh keeps in
      <e2e-date>.events/<scenario>-<tool>-rep<N>.jsonl, one line per run, with
      every other tool's average (size / median wall time) for comparison.
  plots.py playback --timeline results/playback-<date>.timeline.csv --out PNG [--duration 40]
      mpv's media time against wall time of the play runs, one panel per
      cell (clip and rate), one colour per mode (direct, through `vfetch
      serve`, mpv's own cache).

Prints the paths it wrote.  Exit status 3 when matplotlib is missing
(scripts/install-deps.sh bench installs it).
"""

import argparse
import json
import os
import statistics
import sys
from collections import defaultdict

# report_common.py lies next to this script; no __pycache__ left beside them
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
from report_common import load_pyplot, MIB, read_rows  # noqa: E402

# one colour per tool, the same in every plot
COLOURS = {
    "vfetch": "#d62728", "vfetch-nocp": "#ff9896", "aria2c": "#1f77b4", "aria2c-x4": "#17becf", "axel": "#2ca02c",
    "curl": "#9467bd", "wget": "#8c564b", "direct": "#1f77b4", "serve": "#d62728", "cache": "#2ca02c",
}


def pyplot():
    """matplotlib's pyplot, or exit status 3 without matplotlib."""
    return load_pyplot("plots.py") or sys.exit(3)


def read_events(path):
    """(seconds, bytes) of a run's progress events, plus its done event."""
    pts = []
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError:
        return pts
    with f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("event") in ("progress", "done") and "seconds" in ev and "bytes" in ev:
                pts.append((float(ev["seconds"]), int(ev["bytes"])))
    pts.sort()
    return pts


def rates(pts, window):
    """Throughput (MiB/s) at each sample over the last `window` seconds (at least one sample back)."""
    out = []
    j = 0
    for i in range(1, len(pts)):
        t, b = pts[i]
        while j < i - 1 and t - pts[j + 1][0] >= window:
            j += 1
        t0, b0 = pts[j]
        if t > t0:
            out.append((t, (b - b0) / (t - t0) / MIB))
    return out


def plot_e2e(args):
    plt = pyplot()
    prefix = args.out_prefix or os.path.splitext(args.csv)[0]
    events_dir = args.events_dir or os.path.splitext(args.csv)[0] + ".events"
    rows = read_rows(args.csv)
    scenarios = []
    for r in rows:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])
    written = []
    for sc in scenarios:
        sr = [r for r in rows if r["scenario"] == sc]
        size = int(sr[0]["size_bytes"])
        tools = []
        for r in sr:
            if r["tool"] not in tools:
                tools.append(r["tool"])
        avg = {}  # tool -> (median wall, MiB/s)
        for t in tools:
            walls = [float(r["wall_s"]) for r in sr if r["tool"] == t and r["status"] == "ok"]
            if walls:
                m = statistics.median(walls)
                avg[t] = (m, size / MIB / m)
        series = defaultdict(list)  # tool -> [(rep, points)]
        for r in sr:
            if not r["tool"].startswith("vfetch"):
                continue
            pts = read_events(os.path.join(events_dir, f"{sc}-{r['tool']}-rep{r['rep']}.jsonl"))
            if pts:
                series[r["tool"]].append((r["rep"], pts))
        if not series:
            sys.stderr.write(f"plots.py: no vfetch progress events for scenario {sc} in {events_dir}; skipped\n")
            continue

        fig, (ax, bx) = plt.subplots(2, 1, figsize=(10, 7.5), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 2]})
        t_end = max(p[-1][0] for runs in series.values() for _, p in runs)
        # vfetch reports every 100 ms: rates between neighbouring samples for
        # short runs, smoothed over 0.5 s for long ones
        window = 0.05 if t_end < 10 else 0.5
        for tool, runs in series.items():
            c = COLOURS.get(tool, "black")
            for k, (rep, pts) in enumerate(runs):
                rs = rates(pts, window)
                label = f"{tool} (rep {rep})" if len(runs) > 1 else tool
                ax.plot([x for x, _ in rs], [y for _, y in rs], color=c, lw=1.2,
                        marker="." if len(rs) < 60 else None, alpha=1.0 if k == 0 else 0.55, label=label)
                bx.plot([0] + [x for x, _ in pts], [0] + [b / MIB for _, b in pts], color=c, lw=1.2,
                        alpha=1.0 if k == 0 else 0.55)
        styles = ["--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1))]
        k = 0
        for t in tools:
            if t not in avg:
                continue
            wall, mibs = avg[t]
            c = COLOURS.get(t, "grey")
            if t.startswith("vfetch"):
                ax.axhline(mibs, color=c, lw=1, ls=":", label=f"{t} average {mibs:.1f} MiB/s ({wall:.2f} s)")
                continue
            ls = styles[k % len(styles)]
            k += 1
            ax.axhline(mibs, color=c, lw=1.5, ls=ls, label=f"{t} average {mibs:.1f} MiB/s ({wall:.2f} s)")
            bx.plot([0, wall], [0, size / MIB], color=c, lw=1.2, ls=ls)
            if wall <= t_end * 1.3:
                bx.plot([wall], [size / MIB], "o", color=c, ms=4)
        bx.axhline(size / MIB, color="grey", lw=0.8)
        ax.set_xlim(0, t_end * 1.3)
        ax.set_ylim(bottom=0)
        bx.set_ylim(0, size / MIB * 1.05)
        ax.set_ylabel("MiB/s (vfetch: " + ("since its previous report)" if window < 0.1 else "over 0.5 s)"))
        bx.set_ylabel("MiB done")
        bx.set_xlabel("seconds since the download started (vfetch's clock; others: average to their median wall time)")
        ax.set_title(f"e2e scenario {sc}: {size / MIB:g} MiB, vfetch throughput against the other tools' averages")
        ax.grid(alpha=0.3)
        bx.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        out = f"{prefix}-throughput-{sc}.png"
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out)
    return written


def plot_playback(args):
    plt = pyplot()
    runs = defaultdict(list)  # (cell, mode, rep) -> [(wall, media)]
    for r in read_rows(args.timeline):
        try:
            runs[(r["cell"], r["mode"], int(r["rep"]))].append((float(r["wall_s"]), float(r["media_s"])))
        except (KeyError, ValueError):
            continue
    if not runs:
        sys.stderr.write(f"plots.py: no samples in {args.timeline}; no plot\n")
        return []
    dur = args.duration
    cells = list(dict.fromkeys(c for c, _, _ in runs))
    cols = min(2, len(cells))
    rows = (len(cells) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 4.8 * rows), squeeze=False)
    names = {"direct": "direct (mpv --cache=no)", "serve": "through vfetch serve", "cache": "mpv's own cache"}
    for i, cell in enumerate(cells):
        ax = axes[i // cols][i % cols]
        t_max = dur
        for (c, mode, rep), pts in sorted(runs.items()):
            if c != cell:
                continue
            pts.sort()
            first = min(r for cc, mm, r in runs if cc == cell and mm == mode)
            ax.plot([w for w, _ in pts], [m for _, m in pts], color=COLOURS.get(mode, "black"), lw=1.3,
                    alpha=1.0 if rep == first else 0.35, label=names.get(mode, mode) if rep == first else None)
            t_max = max(t_max, pts[-1][0])
        ax.plot([0, dur], [0, dur], color="grey", lw=0.8, ls="--", label="no start-up, no stall")
        ax.axhline(dur, color="grey", lw=0.6)
        ax.set_xlim(0, t_max * 1.03)
        ax.set_ylim(0, dur * 1.05)
        ax.set_title(cell)
        ax.set_xlabel("wall seconds since mpv started")
        ax.set_ylabel("media seconds played")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    for j in range(len(cells), rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.suptitle(f"mpv playing a {dur:g} s, 16 Mbit/s MP4 per clip and per-connection rate (flat: a stall)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    plt.close(fig)
    return [args.out]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    e = sub.add_parser("e2e", help="throughput over time per e2e scenario")
    e.add_argument("--csv", required=True)
    e.add_argument("--events-dir", default="")
    e.add_argument("--out-prefix", default="")
    p = sub.add_parser("playback", help="the playback stall timeline")
    p.add_argument("--timeline", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--duration", type=float, default=40.0)
    a = ap.parse_args()
    written = plot_e2e(a) if a.what == "e2e" else plot_playback(a)
    for w in written:
        print(w)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
