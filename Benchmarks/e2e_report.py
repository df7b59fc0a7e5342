#!/usr/bin/env python3
"""Statistics and Markdown report for Benchmarks/e2e.sh (Python 3 stdlib only).

Inputs: the raw per-run CSV written by e2e.sh, its metadata file (tab-separated
"key<TAB>values..." lines) and a copy of nginx's access log (format "bench" in
nginx.conf.in).  Prints the report to stdout and writes it to --md.
"""

import argparse
import bisect
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
    fmt, fnum, isnan, md_row, md_rule, med, med_range, MIB, parse_meta, read_rows, report_head, runs_ok_cell,
    write_report)

SLOW_RATE = 512 * 1024  # bytes/s, the slow rate of /uneven/ in nginx.conf.in


HARNESS_UA = "e2e-harness"  # user agent of e2e.sh's own probe/warm-up downloads
LOG_RE = re.compile(r'^(\S+) (\d+) \d+ \d+ \d+ \S+ (\d*) (\S+) "[^"]*" "(.*)"$')


def parse_access_log(path):
    """Returns (msec, connection, limit_rate, uri) per logged client request."""
    out = []
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError:
        return out
    with f:
        for line in f:
            m = LOG_RE.match(line.rstrip("\n"))
            if not m or m.group(5) == HARNESS_UA:
                continue
            try:
                out.append((float(m.group(1)), int(m.group(2)), int(m.group(3) or 0), m.group(4)))
            except ValueError:
                continue
    return out


def assign_requests(runs, requests, slack=2.0):
    """Maps each logged request to the run during which it ended.

    Returns {run index: (set of connections, set of slow connections)}.
    """
    order = sorted(range(len(runs)), key=lambda i: runs[i]["t0"])
    starts = [runs[i]["t0"] for i in order]
    res = defaultdict(lambda: (set(), set()))
    for msec, conn, rate, uri in requests:
        j = bisect.bisect_right(starts, msec) - 1
        if j < 0:
            continue  # probes before the first run
        i = order[j]
        if msec > runs[i]["t1"] + slack:
            continue
        conns, slow = res[i]
        conns.add(conn)
        if uri.startswith("/uneven/") and 0 < rate <= SLOW_RATE:
            slow.add(conn)
    return res


def fmt_int_or_half(x):
    if isnan(x):
        return "—"
    return f"{x:g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--access-log", default="")
    ap.add_argument("--md", required=True)
    a = ap.parse_args()

    meta, metas = parse_meta(a.meta)
    rows = read_rows(a.csv)
    runs = []
    for r in rows:
        runs.append(
            {
                "i": len(runs),
                "scenario": r["scenario"],
                "size": int(r["size_bytes"]),
                "capped": r["capped"] == "1",
                "tool": r["tool"],
                "status": r["status"],
                "rc": r["exit_code"],
                "wall": fnum(r["wall_s"]),
                "cpu": fnum(r["user_s"]) + fnum(r["sys_s"]),
                "rss": fnum(r["maxrss_kib"]) / 1024.0,
                "t0": fnum(r["start_ts"]),
                "t1": fnum(r["end_ts"]),
                "sha_ok": r["sha_ok"] == "1",
            }
        )
    reqs = parse_access_log(a.access_log) if a.access_log else []
    per_run = assign_requests(runs, reqs)

    link = metas.get("link", [[]])[0]
    link_rate, link_bps = (link[0], float(link[1])) if len(link) >= 2 else ("800mbit", 8e8)
    tbf_burst, tbf_lat = (link[2], link[3]) if len(link) >= 4 else ("?", "?")
    mode = meta.get("mode", "?")

    L = report_head("vfetch end-to-end throughput benchmark", meta, metas)
    w = L.append
    if mode == "netns":
        w(f"- Network: private network namespace, clients and nginx on its `lo` (MTU 65536); "
          f"link cap where marked: `tc qdisc add dev lo root tbf rate {link_rate} burst {tbf_burst} "
          f"latency {tbf_lat}` ({link_bps / 1e6:.0f} Mbit/s = {link_bps / 8 / MIB:.2f} MiB/s)")
    else:
        w("- Network: **fallback: host loopback, NO link cap** (not root or no netns); "
          "the link-limit ratio is not shown")
    w("- Server: nginx, 1 worker, sendfile on, keepalive_requests 1000000, files on "
      f"{meta.get('tmpfs', 'tmpfs')} (outputs too); `sendfile_max_chunk {meta.get('chunk', '?')}` "
      "in the throttled locations (the first write of each response, at most one chunk, is not delayed)")
    w("- Per-connection limits (nginx `limit_rate`, per request): `/cdn/` 4 MiB/s; "
      "`/uneven/` 512 KiB/s for every connection whose serial number `$connection` is divisible by 8 "
      "(exactly 1 in 8, by a decimal regex in a `map`), 4 MiB/s for the others; `/fast/` unlimited. "
      "The serial counter is global (all tools, probes and health checks), so *which* of a tool's "
      "connections are slow varies from run to run")
    for p in metas.get("probe", []):
        cap, size, wall = p[0] == "1", int(p[1]), float(p[2])
        w(f"- Link probe: `curl` of {size // MIB} MiB via `/fast/` "
          + (f"with the cap: {size / MIB / wall:.1f} MiB/s (cap {link_bps / 8 / MIB:.2f} MiB/s incl. headers)"
             if cap else f"without cap: {size / MIB / wall:.1f} MiB/s"))
    w(f"- Each run: `{meta.get('wrapper', '')}`; wall time from timestamps around that "
      f"(includes ~{meta.get('wrapper_ms', '?')} ms wrapper start-up, measured with `true`); "
      "CPU = user+sys and peak RSS from GNU time (tool process tree)")
    w(f"- Repetitions: {meta.get('reps', '?')} per tool and scenario, tools interleaved "
      "(rep 1: all tools, rep 2: all tools, …; the starting tool rotates per rep); "
      "statistics are medians over successful runs (range in brackets)")
    w(f"- URL: `{meta.get('base_url', '')}/<location>/f-<size>.bin`; every download is checked "
      "against the SHA-256 of the generated random file, then deleted; before each scenario one "
      "untimed `curl` download of its file via `/fast/` warms the tmpfs")
    if meta.get("events"):
        w(f"- vfetch runs with `--json`: one progress line per 100 ms on stdout, into a file on "
          f"{meta.get('tmpfs', 'tmpfs')} with the rest of its output; afterwards copied to "
          f"`{meta.get('events')}/<scenario>-<tool>-rep<N>.jsonl` for the throughput plots")
    if meta.get("quick") == "1":
        w("- **--quick** (smaller files, 1 rep by default): indicative only")
    for n in metas.get("note", []):
        w(f"- Note: {n[0]}")
    w("")
    w("Commands (`URL`, `OUT`, `DIR`/`NAME` filled in per run):")
    w("")
    w("```")
    for c in metas.get("command", []):
        w(c[1])
    w("```")

    scen_meta = {s[0]: s for s in metas.get("scenario", [])}
    tc_stats = {s[0]: s[1] for s in metas.get("tc_stats", [])}
    scenarios = []
    for r in runs:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])

    for sc in scenarios:
        sr = [r for r in runs if r["scenario"] == sc]
        size = sr[0]["size"]
        capped = sr[0]["capped"]
        loc = scen_meta.get(sc, [sc, "", "?"])[2]
        tmo = scen_meta.get(sc, [sc, "", "", "", "?"])[4]
        limit_t = size * 8 / link_bps if capped else None
        w("")
        w(f"## Scenario `{sc}`: {size / MIB:g} MiB via `{loc}`, "
          + (f"link cap {link_bps / 1e6:.0f} Mbit/s (link-limit time {limit_t:.2f} s)" if capped
             else "no link cap")
          + f"; limit {tmo} s per run")
        w("")
        tools = []
        for r in sr:
            if r["tool"] not in tools:
                tools.append(r["tool"])
        stats = {}
        for t in tools:
            tr = [r for r in sr if r["tool"] == t]
            ok = [r for r in tr if r["status"] == "ok"]
            idx = [r["i"] for r in tr]
            ok_idx = [r["i"] for r in ok]
            conns = [len(per_run[i][0]) for i in ok_idx if i in per_run]
            slow = [len(per_run[i][1]) for i in idx if i in per_run]
            walls = [r["wall"] for r in ok]
            stats[t] = {
                "n": len(tr),
                "ok": len(ok),
                "fail": defaultdict(int),
                "walls": walls,
                "wall": med(walls),
                "wmax": max(walls) if walls else math.nan,
                "tput": med([size / MIB / r["wall"] for r in ok]),
                "cpu": med([r["cpu"] for r in ok]),
                "rss": med([r["rss"] for r in ok]),
                "sha_ok": sum(r["sha_ok"] for r in tr),
                "sha_bad": sum(r["status"] == "sha_mismatch" for r in tr),
                "conns": med([float(c) for c in conns]),
                "slow": sum(slow),
            }
            for r in tr:
                if r["status"] != "ok":
                    stats[t]["fail"][r["status"]] += 1
        peers = [s["wall"] for t, s in stats.items() if not t.startswith("vfetch") and s["ok"]]
        best = min(peers) if peers else math.nan
        best_tool = next((t for t, s in stats.items() if not t.startswith("vfetch") and s["ok"] and s["wall"] == best), None)
        hdr = ["tool", "runs OK", "wall s (min–max)", "MiB/s", "CPU s", "peak RSS MiB",
               "× best peer" + (f" ({best_tool})" if best_tool else ""),
               "× link limit", "conns/run", "slow conns (all runs)" if sc == "uneven" else None, "SHA OK"]
        hdr = [h for h in hdr if h is not None]
        w(md_row(hdr))
        w(md_rule("l" + "r" * (len(hdr) - 1)))
        for t in tools:
            s = stats[t]
            runs_ok = runs_ok_cell(s["ok"], s["n"], s["fail"])
            wall = med_range(s["walls"], 3 if s["wmax"] < 1 else 2)
            vs_peer = fmt(s["wall"] / best) if s["ok"] and not math.isnan(best) else "—"
            vs_link = fmt(s["wall"] / limit_t) if (limit_t and s["ok"]) else "—"
            done = s["sha_ok"] + s["sha_bad"]  # runs that exited 0 with an output file
            if s["sha_bad"]:
                sha = f"**NO** ({s['sha_bad']} of {done} mismatch)"
            elif done == 0:
                sha = "— (none completed)"
            elif done == s["n"]:
                sha = "yes"
            else:
                sha = f"yes ({done} of {s['n']} completed)"
            cells = [f"`{t}`" if not t.startswith("vfetch") else f"**`{t}`**", runs_ok, wall, fmt(s["tput"], 1),
                     fmt(s["cpu"]), fmt(s["rss"], 1), vs_peer, vs_link, fmt_int_or_half(s["conns"])]
            if sc == "uneven":
                cells.append(str(s["slow"]) if reqs else "—")
            cells.append(sha)
            w(md_row(cells))
        png = f"{os.path.splitext(a.md)[0]}-throughput-{sc}.png"
        if os.path.exists(png):
            w("")
            w(f"![{sc}: vfetch throughput over time against the other tools' averages]({os.path.basename(png)})")
        if sc in tc_stats:
            w("")
            w(f"tc after this scenario: `{tc_stats[sc].strip()}`")
            m = re.search(r"dropped (\d+)", tc_stats[sc])
            if m and int(m.group(1)) > 0:
                w("")
                w(f"Note: the link shaper dropped {m.group(1)} packets in this scenario: its queue "
                  "(rate × latency + burst) overflowed while the link was saturated, so TCP had to "
                  "recover from losses at the bottleneck, as on a real link")

    # the /uneven/ selection, as nginx actually applied it
    un = {}
    for msec, conn, rate, uri in reqs:
        if uri.startswith("/uneven/") and rate > 0:
            un[conn] = rate
    if un:
        slow = sorted(c for c, r in un.items() if r <= SLOW_RATE)
        consistent = all((c % 8 == 0) == (r <= SLOW_RATE) for c, r in un.items())
        w("")
        w(f"`/uneven/` as applied by nginx: {len(slow)} of {len(un)} connections at 512 KiB/s "
          f"(serials {', '.join(map(str, slow[:20]))}{' …' if len(slow) > 20 else ''}); "
          f"slow exactly when serial ≡ 0 (mod 8): {'yes' if consistent else '**NO**'}")

    w("")
    w("Ratios: `× best peer` = median wall / the lowest median wall of the non-vfetch tools; "
      "`× link limit` = median wall / (size ÷ link rate), where the link is capped. "
      "`conns/run` = distinct TCP connections nginx logged per successful run (median)."
      + (" In `uneven`, a single-connection tool that draws a slow connection (1 in 8) needs 8× as "
         "long and usually hits the per-run limit (shown as `timeout`)." if "uneven" in scenarios else ""))
    write_report(L, a.md)


if __name__ == "__main__":
    main()
