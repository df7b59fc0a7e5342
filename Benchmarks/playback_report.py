#!/usr/bin/env python3
"""Statistics and Markdown report for Benchmarks/playback.sh (Python 3 stdlib only).

Inputs: the raw per-run CSV written by playback.sh, its metadata file
(tab-separated "key<TAB>values..." lines) and the -re timeline CSV.  Writes a
summary CSV (--summary) and the report (--md), and prints the report.
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
from report_common import (  # noqa: E402
    fmt, fnum, isnan, md_row, md_rule, med, med_range, MIB, parse_meta, read_rows, report_head, runs_ok_cell,
    write_report)

# Targets for the serve mode (issue 6).
TARGET_PLAY_S = 42.0      # full -re decode of the 40 s clip through serve
TARGET_TTFF_RATIO = 1.5   # serve TTFF / direct TTFF
TARGET_SEEK_S = 1.0       # seek-to-play into an uncached position
MODES = ("direct", "serve")
MODE_NAME = {"direct": "direct from the origin", "serve": "through `vfetch serve`"}


def verdict(ok):
    return "" if ok is None else (" ✅" if ok else " ❌")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--timeline", default="")
    ap.add_argument("--summary", required=True)
    ap.add_argument("--md", required=True)
    a = ap.parse_args()

    meta, metas = parse_meta(a.meta)
    rows = read_rows(a.csv)

    clip = metas.get("clip", [["40", "0", "?", "0", ""]])[0]
    clip_s = float(clip[0])
    clip_bytes = int(clip[1])
    boxes = clip[2] if len(clip) > 2 else "?"
    moov_at = int(clip[3]) if len(clip) > 3 else 0
    clip_cmd = clip[4] if len(clip) > 4 else ""
    origin = metas.get("origin", [["1 MiB/s", ""]])[0]  # rate, URL
    seek_to = meta.get("seek_to", "30")
    serve_meta = metas.get("serve", [["0", ""]])[0]
    serve_available = serve_meta[0] == "1"
    serve_why = serve_meta[1] if len(serve_meta) > 1 else ""
    frames = {m[0]: (m[1], m[2] if len(m) > 2 else "") for m in metas.get("frames", [])}

    stats = {}
    for mode in MODES:
        mr = [r for r in rows if r["mode"] == mode]
        st = {"runs": 0, "ok": 0, "fail": defaultdict(int)}
        for what in ("play", "ttff", "seek", "probe"):
            wr = [r for r in mr if r["measure"] == what]
            if what != "probe":
                st["runs"] += len(wr)
            ok = [r for r in wr if r["status"] == "ok"]
            if what != "probe":
                st["ok"] += len(ok)
            for r in wr:
                if r["status"] != "ok":
                    st["fail"][f"{what} {r['status']}"] += 1
            st[what] = [fnum(r["wall_s"]) for r in ok]
            st[what + "_med"] = med(st[what])
        st["stall"] = [w - clip_s for w in st["play"]]
        st["stall_med"] = med(st["stall"])
        stats[mode] = st
    d, s = stats["direct"], stats["serve"]
    ttff_ratio = s["ttff_med"] / d["ttff_med"] if d["ttff_med"] > 0 else math.nan
    have_serve = serve_available and s["runs"] > 0

    def target(value, limit):
        return None if isnan(value) else value <= limit

    t_play = target(s["play_med"], TARGET_PLAY_S) if have_serve else None
    t_ttff = target(ttff_ratio, TARGET_TTFF_RATIO) if have_serve else None
    t_seek = target(s["seek_med"], TARGET_SEEK_S) if have_serve else None

    # ------------------------------------------------------------ summary CSV
    with open(a.summary, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["mode", "runs_ok", "runs", "full_decode_s", "stall_s", "ttff_s", "seek_s",
                    "ttff_ratio_vs_direct", "frames_identical", "target_full_decode_s",
                    "target_ttff_ratio", "target_seek_s", "meets_targets"])
        for mode in MODES:
            st = stats[mode]
            avail = mode == "direct" or have_serve
            fr = frames.get(mode, ("not available",))[0]
            if not avail:
                w.writerow([mode, 0, 0, "", "", "", "", "", "not available", "", "", "", "not available"])
                continue
            meets = ""
            if mode == "serve":
                flags = [t_play, t_ttff, t_seek]
                meets = "yes" if all(x is True for x in flags) else ("no" if any(x is False for x in flags) else "")
            w.writerow([mode, st["ok"], st["runs"],
                        "" if isnan(st["play_med"]) else f"{st['play_med']:.3f}",
                        "" if isnan(st["stall_med"]) else f"{st['stall_med']:.3f}",
                        "" if isnan(st["ttff_med"]) else f"{st['ttff_med']:.3f}",
                        "" if isnan(st["seek_med"]) else f"{st['seek_med']:.3f}",
                        "" if mode == "direct" or isnan(ttff_ratio) else f"{ttff_ratio:.3f}",
                        fr,
                        TARGET_PLAY_S if mode == "serve" else "",
                        TARGET_TTFF_RATIO if mode == "serve" else "",
                        TARGET_SEEK_S if mode == "serve" else "",
                        meets])

    # ------------------------------------------------------------ Markdown
    L = report_head("vfetch playback benchmark", meta, metas)
    w = L.append
    w(f"- Clip: {clip_s:g} s, {clip_bytes / MIB:.1f} MiB = {clip_bytes * 8 / clip_s / 1e6:.2f} Mbit/s, "
      f"H.264 1280×720@30 (2 s GOPs) + AAC; top-level boxes `{boxes}`: `moov` at byte {moov_at} "
      f"({moov_at / clip_bytes * 100:.1f} % into the file), so a player must fetch the end before the first frame. "
      f"Made with `{clip_cmd}`")
    w(f"- Origin: nginx in Debian's default configuration, `limit_rate 1m` ({origin[0]}) per connection "
      "(the first write of each response, up to nginx's default `sendfile_max_chunk` of 2 MiB, is not delayed: "
      "short range requests, such as a player's, are partly unthrottled), keep-alive, byte ranges; "
      f"clip on {meta.get('tmpfs', 'tmpfs')}; URL `{origin[-1] if len(origin) > 1 else ''}`. "
      f"One connection delivers {1 * MIB * 8 / 1e6:.1f} Mbit/s, less than the clip's "
      f"{clip_bytes * 8 / clip_s / 1e6:.1f} Mbit/s: a direct player cannot play it without stalling "
      f"(downloading it over one connection takes ≥ {clip_bytes / MIB:.0f} s)")
    if meta.get("mode") == "netns":
        w("- Network: private network namespace (nginx, vfetch serve and the players on its `lo`), no link cap")
    else:
        w("- Network: **host loopback** (not root or no netns)")
    if serve_available:
        sc = metas.get("serve_cmd", [["vfetch serve", ""]])[0]
        w(f"- Serve: a fresh `{sc[0].strip()}` per measurement (cold, empty cache on "
          f"{meta.get('tmpfs', 'tmpfs')}), stopped with SIGINT afterwards; player URL "
          "`http://127.0.0.1:PORT/stream?url=<origin URL, percent-encoded>`. Seek: the server started with "
          f"`{sc[1] if len(sc) > 1 and sc[1] else '(its default prefetch)'}`, then `ffprobe URL` (untimed: head and "
          f"`moov`), then the timed seek to {seek_to} s")
    else:
        w(f"- Serve: **not available** ({serve_why})")
    w(f"- Each run: `{meta.get('wrapper', '')}`; wall time from timestamps around that (includes "
      f"~{meta.get('wrapper_ms', '?')} ms wrapper start-up, measured with `true`, and ffmpeg's own start-up)")
    w(f"- Repetitions: {meta.get('reps', '?')}; per rep both modes, alternating which goes first; "
      "medians over successful runs (range in brackets)")
    w("- `ffmpeg -re` does not stop its clock during a stall: afterwards it reads as fast as data arrives until "
      f"it has caught up. So `stall` = wall − {clip_s:g} s is what the whole playback took longer than the clip, "
      "a lower bound of a real player's rebuffering time")
    if meta.get("quick") == "1":
        w("- **--quick**: indicative only")
    for n in metas.get("note", []):
        w(f"- Note: {n[0]}")
    w("")
    w("## Results")
    w("")
    hdr = ["mode", "runs OK (TTFF, seek, full)", f"full decode s (`-re`, {clip_s:g} s clip)", f"stall s (wall − {clip_s:g})",
           "time to first frame s", f"seek to {seek_to} s, first frame s", "TTFF ÷ direct", "frames identical"]
    w(md_row(hdr))
    w(md_rule("l" + "r" * (len(hdr) - 2) + "l"))
    for mode in MODES:
        st = stats[mode]
        fr = frames.get(mode, ("not available", ""))
        if mode == "serve" and not have_serve:
            w(md_row([f"**{MODE_NAME[mode]}**", "not available"] + ["—"] * 5 + ["not available"]))
            continue
        runs_ok = runs_ok_cell(st["ok"], st["runs"], st["fail"])
        frames_cell = {"yes": "yes", "NO": "**NO**", "failed": "**check failed**"}.get(fr[0], fr[0])
        if mode == "direct" and fr[0] != "not available":
            frames_cell += " (origin, unthrottled: the check of the check)"
        name = MODE_NAME[mode] if mode == "direct" else f"**{MODE_NAME[mode]}**"
        w(md_row([
            name, runs_ok,
            med_range(st["play"]) + (verdict(t_play) if mode == "serve" else ""),
            med_range(st["stall"]),
            med_range(st["ttff"], 3),
            med_range(st["seek"], 3) + (verdict(t_seek) if mode == "serve" else ""),
            "1.00" if mode == "direct" else fmt(ttff_ratio) + verdict(t_ttff),
            frames_cell]))
    w(f"| target (serve) | | ≤ {TARGET_PLAY_S:g} | ≤ {TARGET_PLAY_S - clip_s:g} | | ≤ {TARGET_SEEK_S:g} "
      f"| ≤ {TARGET_TTFF_RATIO:g} | yes |")
    w("")
    if have_serve:
        if s["probe"]:
            w(f"Untimed `ffprobe` through the server before each seek run (head + `moov` into the cache): "
              f"median {fmt(s['probe_med'], 3)} s.")
            w("")
        missed = [name for name, ok in (("full decode ≤ 42 s", t_play), ("TTFF ≤ 1.5× direct", t_ttff),
                                        ("seek first frame ≤ 1 s", t_seek)) if ok is False]
        unknown = [name for name, ok in (("full decode", t_play), ("TTFF", t_ttff), ("seek", t_seek)) if ok is None]
        if missed:
            w("Targets missed: " + "; ".join(missed) + ".")
        elif unknown:
            w("Targets not measured: " + ", ".join(unknown) + ".")
        else:
            w("All three targets met.")
        w("")
    for rc, wall, requests, fetched, moov, duration in metas.get("info", []):
        budget = int(moov) + 512 * 1024
        ok = rc == "0" and int(requests) <= 3 and int(fetched) <= budget
        w(f"`vfetch info URL` on the origin (`moov` at the end): exit {rc}, {float(wall):.3f} s, "
          f"**{requests} requests, {int(fetched):,} bytes** (nginx's log) for a `moov` of {int(moov):,} bytes; "
          f"target ≤ 3 requests and ≤ `moov` + 512 KiB = {budget:,} bytes{verdict(ok)}; duration said: {duration} s.")
        w("")
    plot = meta.get("plot")
    if plot and os.path.exists(os.path.join(os.path.dirname(os.path.abspath(a.md)), plot)):
        w(f"Media time against wall time of the `-re` runs (samples every 0.5 s from `-progress`; "
          f"the dashed lines are uninterrupted playback after each mode's start-up):")
        w("")
        w(f"![playback timeline]({plot})")
        w("")
    w("Commands (`URL` is the origin URL or the serve URL):")
    w("")
    w("```")
    for c in metas.get("cmd", []):
        w(f"{c[0]:6} {c[1]}")
    w("```")
    write_report(L, a.md)


if __name__ == "__main__":
    main()
