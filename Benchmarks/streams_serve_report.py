#!/usr/bin/env python3
"""Report of Benchmarks/streams-serve.sh (Python 3 stdlib; matplotlib for the plot).

  streams_serve_report.py --base results/streams-serve-<date>

reads BASE.csv (one line per play or seek), BASE.meta.tsv, BASE.timeline.csv,
BASE.access.log (nginx) and BASE.sizes.tsv (every file nginx serves and its
size), writes BASE.md and, with matplotlib, BASE-timeline.png, and prints the
report.

Fetched twice: in nginx's log of a serve run (the play and the seek beside
it), each segment response sent the bytes from its Range header's first byte
(0 without one) on, as many as its body had; bytes covered by more than one
response were fetched twice.
"""

import argparse
import csv
import math
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
from report_common import (  # noqa: E402
    fmt, fnum, load_pyplot, md_row, md_rule, med, med_range, MIB, parse_meta, read_access_log, read_rows, read_sizes,
    report_head, runs_ok_cell, write_report)

TARGET_PLAY_RATIO = 1.05   # a play through serve (and offline) ends within 5% of real time
TARGET_SEEK_S = 0.5        # from the seek's start to its first frame
TARGET_DIRECT_RATIO = 1.5  # the origin must be slow enough that direct play falls far behind
# A request this long after the origin sent a segment's last byte fetches it again; sooner, it is one
# of the parallel requests of the first fetch, sent before the bytes it asks for arrived elsewhere.
AGAIN_AFTER_S = 1.0
MODES = ("direct", "serve", "offline")
MODE_NAME = {"direct": "direct from the origin", "serve": "through `vfetch serve`, cold cache",
             "offline": "through `vfetch serve`, origin stopped"}


def verdict(ok):
    return "" if ok is None else " ✅" if ok else " ❌"


def is_segment(uri):
    return uri.startswith("/slowstreams/") and not uri.endswith((".m3u8", ".mpd"))


def union_length(spans):
    total, end = 0, -1
    for a, b in sorted(spans):
        if b > max(a, end):
            total += b - max(a, end)
            end = b
    return total


def fetched(lines, sizes):
    """Per segment URI in these log lines: responses, bytes sent, bytes sent twice (responses whose
    ranges overlap), and requests made AGAIN_AFTER_S after the origin had sent every byte of it."""
    responses = defaultdict(list)   # uri -> [(start s, end s, first byte, end byte)]
    for r in lines:
        if r is None or not is_segment(r.uri):
            continue
        first = 0
        m = re.match(r"bytes=(\d*)-(\d*)$", r.range)
        if m and m.group(1):
            first = int(m.group(1))
        elif m and m.group(2):   # a suffix range: the last N bytes
            first = max(0, sizes.get(r.uri, 0) - int(m.group(2)))
        responses[r.uri].append((r.start, r.end, first, first + r.sent))
    result = {}
    for uri, rs in responses.items():
        spans = [(a, b) for _, _, a, b in rs if b > a]
        sent = sum(b - a for a, b in spans)
        # when the origin had sent all of it: the first response end by which the spans cover the file
        whole_at = None
        for _, end_s, _, _ in sorted(rs, key=lambda r: r[1]):
            if union_length([(a, b) for _, e, a, b in rs if e <= end_s and b > a]) >= sizes.get(uri, 0):
                whole_at = end_s
                break
        again = sum(1 for start_s, _, _, _ in rs if whole_at is not None and start_s > whole_at + AGAIN_AFTER_S)
        result[uri] = (len(rs), sent, sent - union_length(spans), again)
    return result


def plot(timeline, streams, seconds, out):
    plt = load_pyplot("streams_serve_report.py")
    if plt is None:
        return False
    colours = {"direct": "#1f77b4", "serve": "#d62728", "offline": "#2ca02c"}
    fig, axes = plt.subplots(1, len(streams), figsize=(7 * len(streams), 5.5), squeeze=False)
    t_max = seconds
    for ax, stream in zip(axes[0], streams):
        seen = set()
        for (s, mode, rep), pts in sorted(timeline.items()):
            if s != stream:
                continue
            pts.sort()
            t_max = max(t_max, pts[-1][0])
            label = None if mode in seen else MODE_NAME[mode].replace("`", "")
            seen.add(mode)
            ax.plot([0] + [w for w, _ in pts], [0] + [m for _, m in pts], color=colours[mode], lw=1.2, alpha=0.7,
                    label=label, drawstyle="steps-post")
        ax.plot([0, seconds], [0, seconds], color="grey", lw=0.8, ls="--", label="real time")
        ax.set_title(stream)
        ax.set_xlabel("wall seconds since the player started")
        ax.set_ylabel("media seconds played (ffmpeg -re, -progress out_time)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    for ax in axes[0]:
        ax.set_xlim(0, t_max * 1.03)
        ax.set_ylim(0, seconds * 1.05)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    base = ap.parse_args().base
    meta, metas = parse_meta(base + ".meta.tsv")
    rows = read_rows(base + ".csv")
    log_lines = read_access_log(base + ".access.log")
    sizes = read_sizes(base + ".sizes.tsv")
    timeline = defaultdict(list)
    with open(base + ".timeline.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            timeline[(r["stream"], r["mode"], int(r["rep"]))].append((float(r["wall_s"]), float(r["media_s"])))
    seconds = float(metas["fixtures"][0][1])
    seek_to, seek_after = metas["seek"][0]
    streams = [s[0] for s in metas.get("stream", [])]

    lines = report_head("Streams through vfetch serve", meta, metas)
    lines += [f"- Mode: {meta.get('mode')}; origin {metas['origin'][0][0]} per connection "
              f"(nginx `limit_rate`, default configuration); load at start / end: {' '.join(metas['load_start'][0])} / "
              f"{' '.join(metas.get('load_end', [['?']])[0])}",
              f"- Streams: {seconds:g} s, 3 variants, {metas['fixtures'][0][2]} s segments (`{metas['fixtures'][0][0]}`)"]
    for s in metas.get("stream", []):
        lines.append(f"  - {s[0]}: {s[1]} (`{s[2]}`, the 720p video and its audio: `-map {s[3].replace(' ', ' -map ')}`)")
    for c in metas.get("cmd", []):
        lines.append(f"- {c[0]}: `{c[1]}`")
    lines.append(f"- The seek starts {seek_after} s into the serve run's play, as a second ffmpeg; the direct seek "
                 "runs after the direct play")
    lines.append("")

    summary = []   # (stream, what, value, target, ok)
    for stream in streams:
        sr = [r for r in rows if r["stream"] == stream]
        lines += [f"## {stream}", "",
                  md_row(["mode", "plays ok", f"wall s (median, range)", f"/ {seconds:g} s", "frames identical",
                          "A/V offset s", "startup s", "max lag s"]),
                  md_rule("llrrrrrr")]
        walls = {}
        for mode in MODES:
            plays = [r for r in sr if r["mode"] == mode and r["what"] == "play"]
            ok = [r for r in plays if r["status"] == "ok"]
            fail = defaultdict(int)
            for r in plays:
                if r["status"] != "ok":
                    fail[r["status"]] += 1
            w = [fnum(r["wall_s"]) for r in ok]
            walls[mode] = med(w)
            frames_ok = sum(1 for r in plays if r.get("frames_ok") == "1")
            lags, starts = [], []
            for r in plays:
                pts = sorted(timeline.get((stream, mode, int(r["rep"])), []))
                moving = [(t, m) for t, m in pts if m > 0]
                if moving:
                    starts.append(moving[0][0] - moving[0][1])
                    lags.append(max(t - m for t, m in moving))
            lines.append(md_row([
                MODE_NAME[mode], runs_ok_cell(len(ok), len(plays), fail), med_range(w),
                fmt(med(w) / seconds) + "×", f"{frames_ok}/{len(plays)}",
                med_range([fnum(r["av_offset_s"]) for r in ok], 3), med_range(starts), med_range(lags)]))
        lines.append("")
        seeks = {m: [r for r in sr if r["mode"] == m and r["what"] == "seek"] for m in ("serve", "direct")}
        lines += [md_row(["seek to " + seek_to + " s", "seeks ok", "wall s (median, range)", "first frame the source's"]),
                  md_rule("llrr")]
        seek_med = {}
        for mode, ss in seeks.items():
            ok = [r for r in ss if r["status"] == "ok"]
            fail = defaultdict(int)
            for r in ss:
                if r["status"] != "ok":
                    fail[r["status"]] += 1
            seek_med[mode] = med([fnum(r["wall_s"]) for r in ok]) if len(ok) == len(ss) else math.nan
            lines.append(md_row([MODE_NAME[mode], runs_ok_cell(len(ok), len(ss), fail),
                                 med_range([fnum(r["wall_s"]) for r in ok], 3),
                                 f"{sum(1 for r in ss if r['first_frame_ok'] == '1')}/{len(ss)}"]))
        lines.append("")
        lines += ["Segments from the origin during each serve run (nginx's log: the play and the seek beside it); "
                  f"fetched again: requested more than {AGAIN_AFTER_S:g} s after the origin had sent every byte of it; "
                  "sent twice: bytes in more "
                  "than one response's range:", "",
                  md_row(["rep", "segments", "responses", "MiB sent", "segments fetched again", "MiB sent twice",
                          "segments with bytes sent twice"]),
                  md_rule("rrrrrrr")]
        again_total, twice_all = 0, []
        for r in (r for r in sr if r["mode"] == "serve" and r["what"] == "play"):
            f = fetched(log_lines[int(r["log_from"]):int(r["log_to"])], sizes)
            again = [u for u, v in f.items() if v[3] > 0]
            again_total += len(again)
            twice = sum(v[2] for v in f.values())
            sent = sum(v[1] for v in f.values())
            twice_all.append(twice / sent if sent else math.nan)
            short = lambda u: u.rsplit("/", 2)[-2] + "/" + u.rsplit("/", 1)[-1]  # noqa: E731
            lines.append(md_row([r["rep"], str(len(f)), str(sum(v[0] for v in f.values())), fmt(sent / MIB, 1),
                                 str(len(again)) + (f" ({', '.join(sorted(map(short, again))[:4])})" if again else ""),
                                 fmt(twice / MIB, 1) + f" ({fmt(100 * twice / sent if sent else math.nan, 0)}%)",
                                 str(sum(1 for v in f.values() if v[2] > 0))]))
        offline = [r for r in sr if r["mode"] == "offline" and r["what"] == "play"]
        asked = sum(1 for r in offline for e in log_lines[int(r["log_from"]):int(r["log_to"])] if e)
        lines += ["", f"Requests the origin logged during the offline plays: {asked} (nginx was stopped).", ""]

        plays_ok = {m: all(r["status"] == "ok" for r in sr if r["mode"] == m and r["what"] == "play") for m in MODES}
        summary += [
            (stream, "direct play, wall / real time", fmt(walls["direct"] / seconds) + "×",
             f"> {TARGET_DIRECT_RATIO}× (the origin too slow)", walls["direct"] / seconds > TARGET_DIRECT_RATIO),
            (stream, "play through serve, wall", fmt(walls["serve"]) + " s",
             f"≤ {seconds * TARGET_PLAY_RATIO:g} s, checks pass", walls["serve"] <= seconds * TARGET_PLAY_RATIO and plays_ok["serve"]),
            (stream, "offline replay, wall", fmt(walls["offline"]) + " s",
             f"≤ {seconds * TARGET_PLAY_RATIO:g} s, checks pass",
             walls["offline"] <= seconds * TARGET_PLAY_RATIO and plays_ok["offline"]),
            (stream, f"seek to {seek_to} s during the play", fmt(seek_med["serve"], 3) + " s",
             f"≤ {TARGET_SEEK_S} s, the right frame", seek_med["serve"] <= TARGET_SEEK_S),
            (stream, "segments fetched again (all serve runs)", str(again_total), "0", again_total == 0),
            (stream, "bytes the origin sent twice, share of bytes sent (median)", fmt(100 * med(twice_all), 0) + "%",
             "— (see below)", None),
        ]

    png = base + "-timeline.png"
    head = ["## Targets (medians)", "", md_row(["stream", "measure", "value", "target"]), md_rule("llrr")]
    head += [md_row([s, what, value, target + verdict(ok)]) for s, what, value, target, ok in summary]
    head.append("")
    if plot(timeline, streams, seconds, png):
        head += [f"![timeline]({os.path.basename(png)})", ""]
    i = lines.index("", 4) + 1 if "" in lines[4:] else len(lines)
    write_report(lines[:i] + head + lines[i:], base + ".md")


if __name__ == "__main__":
    main()
