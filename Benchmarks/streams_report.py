#!/usr/bin/env python3
"""Statistics and Markdown report for Benchmarks/streams.sh (Python 3 stdlib only).

Inputs: the raw per-run CSV written by streams.sh, its metadata file
(tab-separated "key<TAB>values..." lines), the resume scenario's CSV, a copy of
nginx's access log (format "bench" in nginx.conf.in) and the list of served
files with their sizes ("/streams/PATH<TAB>bytes").  Prints the report to
stdout and writes it to --md.
"""

import argparse
import json
import math
import os
import re
import sys
from collections import defaultdict

# report_common.py lies next to this script (python3 -P or -I would not look
# there); no __pycache__ left beside them
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
from report_common import (  # noqa: E402
    fmt, fnum, isnan, md_row, md_rule, med, med_range, MIB, parse_meta, read_access_log, read_rows, read_sizes,
    report_head, runs_ok_cell,
    write_report)

TARGET_RATIO = 0.6   # issue 18: vfetch <= 0.6x the fastest peer's wall time in the same run
PEERS = ("ytdlp1", "ytdlp4", "ytdlp16", "ffmpeg", "streamlink")
TOOL_NAME = {"ytdlp1": "yt-dlp -N 1", "ytdlp4": "yt-dlp -N 4", "ytdlp16": "yt-dlp -N 16", "ffmpeg": "ffmpeg -c copy",
             "streamlink": "streamlink (10 threads)", "vfetch": "**vfetch**",
             "vfetch-base": "vfetch (base)"}
TOOL_ORDER = ("ytdlp1", "ytdlp4", "ytdlp16", "ffmpeg", "streamlink", "vfetch-base", "vfetch")
CHECK_WORDS = {
    "frames_differ": "video frames differ from the 720p variant's",
    "duration": "span off by more than 0.2 s",
    "no_audio": "no audio stream",
    "audio_packets": "audio packets missing",
    "av_sync": "audio start off by more than 45 ms",
    "undecodable": "ffmpeg cannot decode the output",
    "no_output": "no output file",
    "check_failed": "the check itself failed",
}


def needed_files(stream, sizes):
    """The files of the 720p variant (and, in DASH, of the audio) that a download must fetch."""
    if stream == "dash":
        keep = re.compile(r"^/streams/dash/(init|seg)-(0|3)[-.]")
    elif stream == "aes":
        keep = re.compile(r"^/streams/aes/(720p/|enc\.key$)")
    else:
        keep = re.compile(rf"^/streams/{re.escape(stream)}/720p/")
    return {u: n for u, n in sizes.items() if keep.match(u) and not u.endswith((".m3u8", ".mpd"))}


def cell(st, key="wall", nd=2):
    """A table cell: the median over OK runs, the failures said."""
    if not st or st["n"] == 0:
        return ""
    vals = st[key]
    s = fmt(med(vals), nd) if vals else "failed"
    if st["fail"]:
        s += " (" + ", ".join(f"{k}×{v}" for k, v in sorted(st["fail"].items())) + f" of {st['n']})"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--resume-csv", default="")
    ap.add_argument("--access-log", default="")
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--md", required=True)
    a = ap.parse_args()

    meta, metas = parse_meta(a.meta)
    rows = read_rows(a.csv)
    sizes = read_sizes(a.sizes)
    streams = [m[0] for m in metas.get("stream", [])]
    kind = {m[0]: m[1] for m in metas.get("stream", [])}
    tools = [t for t in TOOL_ORDER if t in {m[0] for m in metas.get("tool", [])}]
    peers = [t for t in tools if t in PEERS]
    reps = meta.get("reps", "?")

    st = {}
    for s in streams:
        for t in tools:
            rs = [r for r in rows if r["stream"] == s and r["tool"] == t]
            ok = [r for r in rs if r["status"] == "ok"]
            fail = defaultdict(int)
            for r in rs:
                if r["status"] != "ok":
                    fail[r["status"]] += 1
            st[s, t] = {
                "n": len(rs), "ok": len(ok), "fail": fail,
                "wall": [fnum(r["wall_s"]) for r in ok],
                "cpu": [fnum(r["user_s"]) + fnum(r["sys_s"]) for r in ok],
                "rss": [fnum(r["maxrss_kib"]) / 1024 for r in ok],
                "req": [fnum(r["requests"]) for r in ok],
                "mib": [fnum(r["bytes"]) / MIB for r in ok],
                "conns": [fnum(r["conns"]) for r in ok],
                "span": [fnum(r["span_s"]) for r in ok],
                "av": [fnum(r["av_offset_s"]) for r in ok],
                "load": [fnum(r["load1"]) for r in rs],
            }

    L = report_head("Streams: HLS and DASH downloads (`Benchmarks/streams.sh`)", meta, metas)
    mode = meta.get("mode", "?")
    link = metas.get("link", [["800mbit", "256kb", "100ms"]])[0]
    origin = metas.get("origin", [["1 MiB/s", ""]])[0]
    fx = metas.get("fixtures", [["?", "60", "4"]])[0]
    ref = json.loads(meta.get("ref", "{}") or "{}")
    all_loads = [x for s in streams for t in tools for x in st[s, t]["load"]]
    L += [
        f"- Load (1, 5, 15 min averages; other work on the machine shares its {meta.get('nproc', '?')} CPUs): "
        f"{meta.get('load_start', '?')} at the start, {meta.get('load_end', '?')} at the end; 1-min average at "
        f"the runs' starts: median {fmt(med(all_loads))} (range {fmt(min(all_loads, default=math.nan))}–"
        f"{fmt(max(all_loads, default=math.nan))})",
        "- Network: " + (f"private network namespace, clients and nginx on its `lo`, link cap `tc tbf rate {link[0]} "
                         f"burst {link[1]} latency {link[2]}`" if mode == "netns"
                         else "the host's loopback, no link cap"),
        f"- Origin: nginx in Debian's default configuration, `limit_rate 1m` ({origin[0]}) per connection "
        f"(`{origin[1] if len(origin) > 1 else ''}`), keep-alive and byte ranges as nginx does them. "
        "nginx lets a response send `limit_rate` × (whole seconds since it started + 1) bytes: each response's "
        "first 1 MiB (up to 2 MiB across a second boundary) goes out at once, so a 1.9 MB segment takes about 1 s",
        f"- Streams ({fx[1]} s, {fx[2]} s segments = GOPs, cached in `{fx[0]}`): testsrc2 + sine, x264 veryfast CBR, "
        "720p 3.5 Mbit/s, 480p 1.5, 360p 0.8, AAC 128 kbit/s, cut with `-c copy` (commands below)",
        f"- Check of every output (`Benchmarks/streams_check.py`): its decoded video frames' MD5s (framemd5) equal the "
        f"720p variant's ({ref.get('frames', '?')} frames {ref.get('width', '?')}×{ref.get('height', '?')}), one for "
        f"one; from its first packet to the end of its last it spans {fx[1]} s ± 0.2 s; it has the audio "
        f"({ref.get('audio_packets', '?')} AAC packets, ± 2) starting within 45 ms of where the reference's starts "
        "relative to the video. A run whose output fails is counted as failed, not timed. The check passes on the "
        f"720p TS segments concatenated locally: {meta.get('ref_check', '?')}",
        f"- Each run: `{meta.get('wrapper', '<command>').replace('LIMIT', meta.get('timeout', 'LIMIT'))}`; wall time "
        f"from timestamps around that (includes ~{meta.get('wrapper_ms', '?')} ms wrapper start-up); CPU = user+sys "
        "of the tool and its children (yt-dlp's and streamlink's ffmpeg); requests, MiB and connections from nginx's "
        "log",
        f"- Repetitions: {reps} per stream and tool, tools interleaved (the starting tool rotates per rep); medians "
        "over the runs that passed",
    ]
    for n in metas.get("note", []):
        L.append(f"- Note: {n[0]}")

    # ---- the main table
    L += ["", "## Wall time, medians (s)", ""]
    head = ["stream"] + [TOOL_NAME[t] for t in tools]
    if "vfetch" in tools and peers:
        head += ["vfetch ÷ fastest peer", f"target ≤ {TARGET_RATIO}×"]
    L += [md_row(head), md_rule("l" + "r" * (len(head) - 1))]
    summary = []
    for s in streams:
        cells = [kind.get(s, s)] + [cell(st[s, t]) for t in tools]
        if "vfetch" in tools and peers:
            pm = [(med(st[s, p]["wall"]), p) for p in peers if st[s, p]["wall"]]
            v = med(st[s, "vfetch"]["wall"]) if st[s, "vfetch"]["wall"] else math.nan
            if pm and not isnan(v):
                best, who = min(pm)
                r = v / best
                cells += [f"{r:.2f}× {TOOL_NAME[who]}", "✅" if r <= TARGET_RATIO else "❌"]
                summary.append((s, r))
            else:
                cells += ["—", "❌" if isnan(v) and st[s, "vfetch"]["n"] else "—"]
        L.append(md_row(cells))

    L += ["", "## CPU time (user+sys), medians (s)", ""]
    L += [md_row(["stream"] + [TOOL_NAME[t] for t in tools]), md_rule("l" + "r" * len(tools))]
    for s in streams:
        L.append(md_row([kind.get(s, s)] + [cell(st[s, t], "cpu") for t in tools]))

    # ---- per stream and tool
    L += ["", "## Every stream and tool", "",
          md_row(["stream", "tool", "runs OK", "wall s (min–max)", "CPU s", "peak RSS MiB", "requests/run",
                  "MiB/run", "÷ needed", "conns/run", "span s", "A/V start s"]),
          md_rule("llrrrrrrrrrr")]
    for s in streams:
        need = sum(needed_files(s, sizes).values()) / MIB
        for t in tools:
            x = st[s, t]
            if not x["n"]:
                continue
            L.append(md_row([s, TOOL_NAME[t], runs_ok_cell(x["ok"], x["n"], x["fail"]), med_range(x["wall"]),
                             fmt(med(x["cpu"])), fmt(med(x["rss"]), 1), fmt(med(x["req"]), 0), fmt(med(x["mib"]), 1),
                             fmt(med(x["mib"]) / need if need else math.nan), fmt(med(x["conns"]), 0),
                             fmt(med(x["span"]), 3), fmt(med(x["av"]), 3)]))
    L += ["", "`÷ needed`: MiB nginx sent per run ÷ the 720p variant's media (and, in DASH, the audio's): above 1 "
          "where a tool also fetched other variants (ffmpeg opens every variant's playlist and the first segments) "
          "or fetched something twice. `span`: first packet to the end of the last; `A/V start`: audio's first "
          "timestamp − video's (AAC priming makes it about −0.021 s)."]
    fails = [r for r in rows if r["status"] != "ok"]
    if fails:
        L += ["", "Failed runs (the tools' output is in the `.logs/` directory next to this report):", ""]
        for r in fails:
            why = CHECK_WORDS.get(r["status"], r["status"])
            L.append(f"- {r['stream']} {TOOL_NAME.get(r['tool'], r['tool'])} rep {r['rep']}: {why}"
                     + (f" (frames {r['frames']}, {r['width']}×{r['height']}, span {r['span_s']} s, "
                        f"audio packets {r['audio_packets']}, A/V {r['av_offset_s']} s)" if r.get("frames") else ""))

    # ---- resume
    if a.resume_csv and os.path.exists(a.resume_csv) and "resume_window_start" in meta:
        L += resume_section(a, meta, metas, sizes)

    # ---- commands
    L += ["", "## Commands", "", "The streams (run in the cache directory):", "", "```"]
    for c in metas.get("fixture_cmd", []):
        L.append(f"# {c[0]}")
        L.append(c[1])
    L += ["```", "", "The tools (`URL`: the playlist or manifest under /streams/; `OUT`: the outputs' directory):", "",
          "```"]
    seen = set()
    for c in metas.get("command", []):
        s, t, cmd = c[0], c[1], c[2]
        if (t, cmd.replace(s, "")) in seen:
            continue
        seen.add((t, cmd.replace(s, "")))
        L.append(f"{t:<11} {cmd}" + ("" if t not in ("ffmpeg", "streamlink") else f"   # {s}"))
    L += ["```"]
    write_report(L, a.md)


def resume_section(a, meta, metas, sizes):
    runs = read_rows(a.resume_csv)
    lo, hi = int(meta["resume_window_start"]), int(meta.get("resume_window_end", "0") or 0)
    log = read_access_log(a.access_log)[lo:hi or None]
    check = metas.get("resume_check", [["?", ""]])[0]
    need = needed_files("hls", sizes)
    kills = [fnum(r["kill_ts"]) for r in runs if r["kill_ts"]]
    queued = [int(r["queued_bytes"]) for r in runs if r["kill_ts"] and r.get("queued_bytes")]
    starts = [fnum(r["start_ts"]) for r in runs]
    win = metas.get("resume_kill_window", [["500", "2000"]])[0]
    when = f"{int(win[0]) / 1000:g}–{int(win[1]) / 1000:g} s into a run"
    L = ["", "## Resume after kill -9 (vfetch, hls)", "",
         f"`{meta.get('resume_command', '')}`, killed with SIGKILL {len(kills)} times ({when}), rerun with "
         "the same command each time, the last run to the end. From nginx's log (a response is logged when it "
         "has ended): each segment of the 720p variant, how often it was sent whole, and how many of its bytes were "
         "sent in all.", ""]
    full = defaultdict(list)   # uri -> end times of its whole (200, every byte) responses
    sent = defaultdict(int)    # uri -> bytes nginx sent of it, in all responses
    pieces = 0                 # responses with less than the whole file: cut by a kill, or ranges
    ranged = 0
    other = 0
    total = 0
    per_run = defaultdict(lambda: [0, 0, 0])   # whole, pieces, bytes
    for r in log:
        if r is None or not r.uri.startswith("/streams/hls/"):
            continue
        t0, t1, status, nbytes, uri = r.start, r.end, r.status, r.sent, r.uri
        total += nbytes
        j = max([i for i, t in enumerate(starts) if t <= t0] or [0])   # the run that asked
        per_run[j][2] += nbytes
        if uri.endswith(".m3u8"):
            continue
        if uri not in need:
            other += 1
            continue
        sent[uri] += nbytes
        if status == 206:
            ranged += 1
        if status == 200 and nbytes == sizes.get(uri, -1):
            full[uri].append(t1)
            per_run[j][0] += 1
        else:
            pieces += 1
            per_run[j][1] += 1
    dups = {u: ts for u, ts in full.items() if len(ts) > 1}
    over = {u: n - need[u] for u, n in sent.items() if n > need[u]}
    short = [u for u in need if sent.get(u, 0) < need[u]]
    L += [md_row(["run", "killed after s", "exit", "whole segment responses", "partial responses", "MiB sent"]),
          md_rule("rrrrrr")]
    for i, r in enumerate(runs):
        f_, p_, b_ = per_run[i]
        when = (r["killed_after_s"] if r["kill_ts"] else
                f"ended before its kill at {r['killed_after_s']}" if r["killed_after_s"] else "to the end")
        L.append(md_row([r["run"], when, r["exit_code"], str(f_), str(p_),
                         f"{b_ / MIB:.1f}"]))
    need_mib = sum(need.values()) / MIB
    L += ["",
          f"- **Segments fetched whole (status 200, every byte) more than once: {len(dups)}** of {len(need)}"
          + (" ✅" if not dups else " ❌"),
          f"- Segments of which nginx sent more bytes in all than the segment has: {len(over)} "
          f"({sum(over.values()) / MIB:.1f} MiB sent again); fewer (never all of it sent): {len(short)}",
          f"- **Sent again per kill: {sum(over.values()) / MIB / max(1, len(kills)):.2f} MiB**"
          + (f"; of that, queued in the kernel at the kill (nginx's send queues, the link's queue and vfetch's "
             f"receive queues, lost to any client: the floor): {sum(queued) / MIB / len(queued):.2f} MiB per kill"
             if queued else ""),
          f"- Partial responses (cut by a kill, or ranges: {ranged} answered 206): {pieces}; requests for other "
          f"variants' segments: {other}",
          f"- nginx sent {total / MIB:.1f} MiB (playlists included) for the variant's {need_mib:.1f} MiB of media "
          f"({total / MIB / need_mib:.2f}×)" if need_mib else "",
          f"- Output: **{check[0]}**" + (f" (check: {check[1]})" if len(check) > 1 and check[1] else ""), ""]
    if dups:
        L += ["Segments fetched whole more than once (when each whole response ended, before the kill that "
              "followed it; one that ended well before a kill had reached vfetch before it):", "",
              md_row(["segment", "whole responses", "ended before the next kill, s"]), md_rule("lrl")]
        for u in sorted(dups):
            rel = []
            for t in dups[u]:
                nxt = [k for k in kills if k >= t]
                rel.append(f"{nxt[0] - t:.2f}" if nxt else "after the last kill")
            L.append(md_row([u.rsplit("/", 2)[-2] + "/" + u.rsplit("/", 1)[-1], str(len(dups[u])), ", ".join(rel)]))
    return L


if __name__ == "__main__":
    main()
