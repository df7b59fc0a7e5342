#!/usr/bin/env python3
"""Statistics and Markdown report for Benchmarks/playback.sh (Python 3 stdlib only).

Inputs: the per-measurement CSV written by playback.sh
(cell,mode,player,rep,measure,point,status,value,load1) and its metadata file
(tab-separated "key<TAB>values..." lines).  Writes a summary CSV (--summary)
and the report (--md), and prints the report.
"""

import argparse
import csv
import math
import os
import sys
from collections import defaultdict

# report_common.py lies next to this script (python3 -P or -I would not look
# there); no __pycache__ left beside them
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
from report_common import fmt, fnum, med, md_row, md_rule, parse_meta, read_rows, report_head, write_report  # noqa: E402

# issue 17's targets: TTFF through serve / direct for the moovend clip, per rate; seek through
# serve / direct; stalls through serve at 1 MiB/s
TARGET_TTFF = {"1 MiB/s": 0.8, "100 KiB/s": 1.0}
TARGET_SEEK = 0.12
TARGET_STALLS = 0
MODE_NAME = {"local": "local file (the player alone)", "direct": "direct", "serve": "**through `vfetch serve`**", "cache": "mpv's own cache",
             "serve-base": "through the base build's serve ($VFETCH_BASE)"}
PLAY = ("stalls", "stall_s", "played_s")


def verdict(ok):
    return "" if ok is None else (" ✅" if ok else " ❌")


def ratio(a, b):
    return a / b if b and not math.isnan(a) and not math.isnan(b) and b > 0 else math.nan


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--md", required=True)
    a = ap.parse_args()

    meta, metas = parse_meta(a.meta)
    rows = read_rows(a.csv)
    clip_s = float(meta.get("clip_seconds", "40"))
    clips = {c[0]: (int(c[1]), c[2], int(c[3])) for c in metas.get("clip", [])}  # name -> bytes, boxes, moov at
    cells = [c[0] for c in metas.get("cell", [])]
    cell_info = {c[0]: {"clip": c[1], "rate": c[2], "url": c[3], "cap": float(c[4])} for c in metas.get("cell", [])}
    modes = meta.get("modes", ["direct"])
    modes = [modes] if isinstance(modes, str) else modes
    points = meta.get("seek_points", ["", "", "12"])
    seek_cap = float(points[2]) if len(points) > 2 else 12.0
    serve_meta = metas.get("serve", [["0", ""]])[0]
    frames = {(f[0], f[1]): f[2] for f in metas.get("frames", [])}

    # values[(cell, mode, player, measure)] = [value, ...] of the runs that count; capped[...]: how many of
    # them were stopped at a cap (a seek given up on: the cap, a lower bound; a play: its stalls so far)
    values, capped, failed, loads = defaultdict(list), defaultdict(int), defaultdict(int), defaultdict(list)
    for r in rows:
        key = (r["cell"], r["mode"], r["player"], r["measure"])
        loads[(r["cell"], r["mode"])].append(fnum(r["load1"]))
        if r["status"] in ("ok", "capped") and r["measure"] != "probe":
            values[key].append(fnum(r["value"]))
            capped[key] += r["status"] == "capped"
        elif r["measure"] != "probe" or r["status"] != "ok":
            failed[key[:3]] += 1

    def m(cell, mode, player, measure):
        return med(values.get((cell, mode, player, measure), []))

    def low(cell, mode, player, measure):
        """Whether the median is only a lower bound: a value stopped at a cap is at or below it."""
        v, key = m(cell, mode, player, measure), (cell, mode, player, measure)
        if not capped[key]:
            return False
        if measure in PLAY:
            return True
        return v >= seek_cap - 0.01

    def cmp_ratio(cell, mode, player, measure):
        """(ratio to direct, "≤", "≥" or "" : which way the caps leave it open)."""
        r = ratio(m(cell, mode, player, measure), m(cell, "direct", player, measure))
        lo_mode, lo_direct = low(cell, mode, player, measure), low(cell, "direct", player, measure)
        if lo_mode and lo_direct:
            return math.nan, ""
        return r, "≥ " if lo_mode else ("≤ " if lo_direct else "")

    def n(cell, mode, player, measure):
        return len(values.get((cell, mode, player, measure), []))

    def floor(cell, player, measure):
        """What the player alone takes, reading the local file: no server can go below it."""
        lo = m(cell, "local", player, measure)
        if math.isnan(lo):
            return ""
        return (f" (the player alone, from local disk: {fmt(ratio(lo, m(cell, 'direct', player, measure)))}× direct; "
                f"serve {fmt(ratio(m(cell, 'serve', player, measure), lo))}× that)")

    # ------------------------------------------------------------ targets
    targets = []  # (text, ok or None)
    for cell in cells:
        info = cell_info[cell]
        for player in ("ffmpeg", "mpv"):
            if "serve" not in modes:
                continue
            if info["clip"] == "moovend" and info["rate"] in TARGET_TTFF:
                lim = TARGET_TTFF[info["rate"]]
                r = ratio(m(cell, "serve", player, "ttff"), m(cell, "direct", player, "ttff"))
                targets.append((f"{cell}, {player}: TTFF through serve {fmt(r)}× direct, target ≤ {lim:g}×"
                                + floor(cell, player, "ttff"), None if math.isnan(r) else r <= lim))
            r, way = cmp_ratio(cell, "serve", player, "seek")
            ok = None if math.isnan(r) else r <= TARGET_SEEK
            if (way == "≤ " and not ok) or (way == "≥ " and ok):
                ok = None  # a cap leaves it open
            targets.append((f"{cell}, {player}: seek through serve {way}{fmt(r)}× direct, target ≤ {TARGET_SEEK:g}×"
                            + (" (direct's seeks stopped at the cap: undecided)" if ok is None and way else "")
                            + floor(cell, player, "seek"), ok))
            if "serve-base" in modes:
                for x in ("ttff", "seek"):
                    r = ratio(m(cell, "serve", player, x), m(cell, "serve-base", player, x))
                    targets.append((f"{cell}, {player}: {x} through serve {fmt(r)}× the base build's (side by side, "
                                    "interleaved; nothing slower within noise)", None))
        if info["rate"] == "1 MiB/s" and "serve" in modes and n(cell, "serve", "mpv", "stalls"):
            s = values[(cell, "serve", "mpv", "stalls")]
            c = capped[(cell, "serve", "mpv", "stalls")]
            targets.append((f"{cell}, mpv: stalls through serve, median {fmt(med(s), 0)} (max {max(s):g}) "
                            f"of {len(s)} plays{f' ({c} stopped at the cap)' if c else ''}, target {TARGET_STALLS}",
                            med(s) <= TARGET_STALLS if not c or med(s) > TARGET_STALLS else None))

    # ------------------------------------------------------------ summary CSV
    with open(a.summary, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["cell", "mode", "player", "ttff_s", "ttff_ratio", "seek_s", "seek_ratio", "stalls", "stall_s",
                    "played_s", "plays_capped", "plays", "failed", "load1_median"])
        for cell in cells:
            for mode in modes:
                for player in ("ffmpeg", "mpv"):
                    if mode == "cache" and player == "ffmpeg":
                        continue
                    g = {x: m(cell, mode, player, x) for x in ("ttff", "seek") + PLAY}
                    d = {x: m(cell, "direct", player, x) for x in ("ttff", "seek")}
                    w.writerow([cell, mode, player, fmt(g["ttff"], 4), fmt(ratio(g["ttff"], d["ttff"]), 3),
                                fmt(g["seek"], 4), fmt(ratio(g["seek"], d["seek"]), 3),
                                fmt(g["stalls"], 1), fmt(g["stall_s"], 3), fmt(g["played_s"], 3),
                                capped[(cell, mode, player, "stalls")], n(cell, mode, player, "stalls"),
                                failed[(cell, mode, player)], fmt(med(loads[(cell, mode)]), 2)])

    # ------------------------------------------------------------ Markdown
    L = report_head("vfetch playback benchmark", meta, metas)
    w = L.append
    for name, (size, boxes, moov_at) in clips.items():
        w(f"- Clip `{name}`: {clip_s:g} s, {size / 1048576:.1f} MiB = {size * 8 / clip_s / 1e6:.2f} Mbit/s, "
          f"H.264 1280×720@30 (2 s GOPs) + AAC; top-level boxes `{boxes}`, `moov` at byte {moov_at:,}")
    w(f"- Made with `{meta.get('clip_cmd', '')}`")
    w("- Origin: nginx in Debian's default configuration plus `limit_rate` per location (the first write of each "
      "response, up to nginx's default `sendfile_max_chunk` of 2 MiB, is not delayed), keep-alive, byte ranges")
    if meta.get("mode") == "netns":
        w("- Network: private network namespace (nginx, vfetch serve and the players on its `lo`), no link cap")
    else:
        w("- Network: **host loopback** (not root or no netns)")
    rtt = float(meta.get("rtt_ms", "0"))
    if rtt:
        w(f"- **The origin {rtt:g} ms of round trip away**: `delay_proxy.py` relays each connection to nginx, "
          "holding every chunk half of it each way and a connection's first bytes one round trip more (TCP's "
          "handshake); serve and the players reach each other directly")
    w("- Local file: the player reads the clip from the origin's own copy, the time of the player "
      "alone; mpv's local runs are seek runs only (nothing stalls)")
    if serve_meta[0] == "1":
        sc = metas.get("serve_cmd", [["vfetch serve", ""]])[0]
        w(f"- Serve: a fresh `{sc[0].strip()}` per measurement (cold, empty cache), stopped with SIGINT "
          "afterwards; player URL `http://127.0.0.1:PORT/media?url=<origin URL>`. ffmpeg's seeks: one server with "
          f"`{sc[1] if len(sc) > 1 and sc[1] else '(its default prefetch)'}`, an untimed `ffprobe URL` (head and "
          "`moov`), then the five cold seeks")
    else:
        w(f"- Serve: **not available** ({serve_meta[1] if len(serve_meta) > 1 else ''})")
    w(f"- Seek points (seed {points[1] if len(points) > 1 else '?'}): {points[0]} s, in that order, the same for "
      f"every mode, cell and rep; a seek not done after {seek_cap:g} s is given up and counts as {seek_cap:g} s "
      "(\"≥\": the median is such a lower bound; a ratio to such a direct median is an upper bound, \"≤\")")
    w("- ffmpeg: wall time of a cold process (`-frames:v 1`; seeks `-ss POINT`), including its start-up and "
      f"`{meta.get('wrapper', '')}` (~{meta.get('wrapper_ms', '?')} ms). mpv: from its own log (its clock starts "
      "with mpv): TTFF = first frame shown (a seek run and a play run per mode and rep, both counted); seek = seek "
      "command to the next frame shown, each issued as soon as the previous frame is shown; stalls = "
      "paused-for-cache after the first frame, over playing the clip at real speed with `--vo=null --ao=null`. "
      "Direct mpv runs with `--cache=no`, mpv's own cache is `--cache=yes` on the origin")
    w(f"- Repetitions: {meta.get('reps', '?')}; per rep the cells in turn, within a cell the modes rotating which "
      "goes first; medians (ffmpeg's and mpv's seeks: over every point of every rep)")
    w(f"- Load average (1 min) at each rep's start: {', '.join(l[1].split()[0] for l in metas.get('load', []))}; "
      f"the benchmark ran at nice {meta.get('nice', '0')}")
    if meta.get("quick") == "1":
        w("- **--quick**: indicative only")
    for note in metas.get("note", []):
        w(f"- Note: {note[0]}")
    w("")
    w("## Results")
    w("")
    hdr = ["mode", "TTFF ffmpeg s", "÷ direct", "seek ffmpeg s", "÷ direct", "TTFF mpv s", "÷ direct",
           "seek mpv s", "÷ direct", "stalls (mpv)", "stall s", "media played s", "load"]
    for cell in cells:
        info = cell_info[cell]
        w(f"### `{cell}`: {info['clip']} clip at {info['rate']} per connection (plays stopped at {info['cap']:g} s)")
        w("")
        w(md_row(hdr))
        w(md_rule("l" + "r" * (len(hdr) - 1)))
        for mode in modes:
            cells_ = [MODE_NAME[mode]]
            for player in ("ffmpeg", "mpv"):
                for x in ("ttff", "seek"):
                    if mode == "cache" and player == "ffmpeg":
                        cells_ += ["", ""]
                        continue
                    v, c = m(cell, mode, player, x), capped[(cell, mode, player, x)]
                    r, way = cmp_ratio(cell, mode, player, x)
                    cells_ += [("≥ " if low(cell, mode, player, x) else "") + fmt(v, 3)
                               + (f" ({c}/{n(cell, mode, player, x)} at {seek_cap:g} s)" if c else ""),
                               "1.00" if mode == "direct" else way + fmt(r)]
            key = (cell, mode, "mpv")
            c = capped[key + ("stalls",)]
            lower = "≥ " if c else ""  # a capped play had not finished: its stalls are a lower bound
            cells_ += [lower + fmt(m(cell, mode, "mpv", "stalls"), 0), lower + fmt(m(cell, mode, "mpv", "stall_s"), 1),
                       fmt(m(cell, mode, "mpv", "played_s"), 1) + (f" ({c}/{n(*key, 'stalls')} capped)" if c else ""),
                       fmt(med(loads[(cell, mode)]), 1)]
            if failed[(cell, mode, "ffmpeg")] or failed[key]:
                cells_[0] += f" ({failed[(cell, mode, 'ffmpeg')] + failed[key]} failed)"
            w(md_row(cells_))
        w("")
    w("## Targets (issue 17)")
    w("")
    for text, ok in targets:
        w(f"- {text}{verdict(ok)}")
    if not targets:
        w("- not measured (no serve mode)")
    w("")
    for (mode, name), got in sorted(frames.items()):
        w(f"- Decoded frames {'through `vfetch serve`' if mode == 'serve' else 'from the unthrottled origin'}, "
          f"`{name}`: {'identical to the local file' if got == 'yes' else '**' + got + '**'}")
    for rc, wall, requests, fetched, moov, duration in metas.get("info", []):
        w(f"- `vfetch info URL` (`moovend`): exit {rc}, {float(wall):.3f} s, {requests} requests, "
          f"{int(fetched):,} bytes for a `moov` of {int(moov):,} bytes; duration {duration} s")
    w("")
    plot = meta.get("plot")
    if plot and os.path.exists(os.path.join(os.path.dirname(os.path.abspath(a.md)), plot)):
        w("mpv's media time against wall time of the play runs, per cell (from `playback-time` every 0.25 s):")
        w("")
        w(f"![playback timeline]({plot})")
        w("")
    w("Commands (`URL` is the origin URL or the serve URL):")
    w("")
    w("```")
    for c in metas.get("cmd", []):
        w(f"{c[0]:12} {c[1]}")
    w("```")
    write_report(L, a.md)


if __name__ == "__main__":
    main()
