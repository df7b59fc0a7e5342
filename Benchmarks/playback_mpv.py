#!/usr/bin/env python3
"""Reads one mpv run of Benchmarks/playback.sh back from mpv's log (Python 3 stdlib only).

mpv's log lines start with "[  seconds since mpv started][level][module]".  mpv
itself logs "first video frame after restart shown" after the start and after
every seek; playback_mpv.lua adds "pb ..." lines.  Prints the run's rows of
playback.sh's CSV (cell,mode,player,rep,measure,point,status,value,load1):
  ttff       s from mpv's start to its first frame shown
  seek       per target: s from the seek command to the frame shown after it;
             capped (value: the cap) when the script gave up on it first
  stalls     count of paused-for-cache after the first frame (play runs)
  stall_s    time spent in them (a stall still open at the cap ends there)
  played_s   media s reached; capped: the run was stopped at the cap first
and appends the play run's media time against wall time to --timeline.
"""

import argparse
import re
import sys

LINE = re.compile(r"^\[\s*([0-9.]+)\]\[\w\]\[([^\]]+)\] (.*)$")
FRAME = "first video frame after restart shown"


def read(path):
    """(frames, marks): the frame lines' (line, time) and the marks' (time, words, line)."""
    frames, marks = [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f):
            m = LINE.match(line)
            if not m:
                continue
            t, module, text = float(m.group(1)), m.group(2), m.group(3).strip()
            if module == "cplayer" and text == FRAME:
                frames.append((n, t))
            elif module == "playback_mpv" and text.startswith("pb "):
                marks.append((t, text.split()[1:], n))
    return frames, marks


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log")
    ap.add_argument("--what", choices=("play", "seek"), required=True)
    ap.add_argument("--row", required=True, help="cell,mode,player,rep: the rows' first fields")
    ap.add_argument("--load1", default="")
    ap.add_argument("--seek-cap", type=float, default=15.0)
    ap.add_argument("--timeline", default="")
    a = ap.parse_args()

    try:
        frames, marks = read(a.log)
    except OSError as e:
        frames, marks = [], []
        print(f"playback_mpv.py: {e}", file=sys.stderr)
    out = []

    def row(measure, point, status, value):
        out.append(f"{a.row},{measure},{point},{status},{value},{a.load1}")

    ends = [w for _, w, _ in marks if w[0] == "end"]
    why = "_".join(ends[0][1:]).strip("_") if ends else "no_end"
    if not frames:
        row("ttff", "", f"no_frame_{why}", "nan")
        print("\n".join(out))
        return
    first = frames[0][1]
    row("ttff", "", "ok", f"{first:.4f}")

    if a.what == "seek":
        for i, (t, w, n) in enumerate(marks):
            if w[0] != "seek":
                continue
            # the frame logged after the seek command (the log's order: both may have the same ms), before
            # the next mark that ends this seek
            until = next((mn for _, mw, mn in marks[i + 1:] if mw[0] in ("seek-cap", "seek", "cap", "end")), 1 << 60)
            shown = next((ft for fn, ft in frames if n < fn < until), None)
            if shown is not None:
                row("seek", w[1], "ok", f"{shown - t:.4f}")
            elif any(mw[0] == "seek-cap" and mn == until for _, mw, mn in marks):
                row("seek", w[1], "capped", f"{a.seek_cap:.4f}")
            else:
                row("seek", w[1], f"no_frame_{why}", "nan")
    else:
        capped = any(w[0] == "cap" for _, w, _ in marks)
        end_t = max([t for t, _, _ in marks] + [t for _, t in frames])
        stalls, stall_s, since = 0, 0.0, None
        for t, w, _ in marks:
            if w[0] != "stall" or t < first:
                continue
            if w[1] == "true" and since is None:
                stalls, since = stalls + 1, t
            elif w[1] == "false" and since is not None:
                stall_s, since = stall_s + t - since, None
        if since is not None:
            stall_s += end_t - since
        pos = [(t, float(w[1])) for t, w, _ in marks if w[0] == "pos"]
        played = max([p for _, p in pos], default=0.0)
        status = "capped" if capped else ("ok" if why.startswith("eof") or why.startswith("quit") else f"end_{why}")
        row("stalls", "", status, stalls)
        row("stall_s", "", status, f"{stall_s:.3f}")
        row("played_s", "", status, f"{played:.3f}")
        if a.timeline:
            cell, mode, _player, rep = a.row.split(",")
            with open(a.timeline, "a", encoding="utf-8") as f:
                for t, p in [(first, 0.0)] + [x for x in pos if x[0] >= first]:
                    f.write(f"{cell},{mode},{rep},{t:.3f},{p:.3f}\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
