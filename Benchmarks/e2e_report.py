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
    fmt, fnum, isnan, md_row, md_rule, med, med_range, MIB, parse_meta, read_access_log, read_rows, report_head,
    runs_ok_cell, write_report)

SLOW_RATE = 512 * 1024  # bytes/s, the slow rate of /uneven/ in nginx.conf.in
SLOW_EVERY = 5          # /uneven/: serial numbers divisible by 5 (ending in 0 or 5) are slow

# The named peers each scenario's ratios are taken against; CPU ratios too
# where the scenario names them; the link-limit ratio where it is named.
PEERS = {"cdn": ["aria2c"], "uneven": ["aria2c"], "limited": ["aria2c-x4", "aria2c"],
         "mirrors": ["aria2c-x4", "aria2c"],
         "h2": ["aria2c"], "unthrottled": ["curl"], "small": ["aria2c"],
         "many": ["aria2c"]}
CPU_RATIO = {"h2", "unthrottled"}
LINK_RATIO = {"cdn"}

HARNESS_UA = "e2e-harness"  # user agent of e2e.sh's own probe/warm-up downloads


class RunLog:
    """What nginx logged during one run."""

    def __init__(self):
        self.conns = set()   # connection serial numbers
        self.slow = set()    # of those, the slow ones in /uneven/
        self.n503 = 0        # requests answered with 503 (limit_conn)
        self.protos = set()  # $server_protocol values


def assign_requests(runs, requests, slack=2.0):
    """Maps each logged request (Request) to the run during which it ended: {run index: RunLog}."""
    order = sorted(range(len(runs)), key=lambda i: runs[i]["t0"])
    starts = [runs[i]["t0"] for i in order]
    res = defaultdict(RunLog)
    for r in requests:
        j = bisect.bisect_right(starts, r.end) - 1
        if j < 0:
            continue  # probes before the first run
        i = order[j]
        if r.end > runs[i]["t1"] + slack:
            continue
        rl = res[i]
        rl.conns.add(r.conn)
        if r.status == 503:
            rl.n503 += 1
        if r.proto:
            rl.protos.add(r.proto)
        if r.uri.startswith("/uneven/") and 0 < r.rate <= SLOW_RATE:
            rl.slow.add(r.conn)
    return res


def ratio(a, b):
    return a / b if not (isnan(a) or isnan(b) or b == 0) else math.nan


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
    reqs = [r for r in read_access_log(a.access_log) if r and r.agent != HARNESS_UA] if a.access_log else []
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
    w("- Server: nginx in Debian's default configuration (`worker_processes auto`, `worker_connections 768`, "
      "`sendfile on`, `tcp_nopush on`, mime.types, gzip on; keep-alive, `tcp_nodelay` and `sendfile_max_chunk` "
      "at nginx's defaults: 75 s, 1000 requests, on, 2 MiB) plus only the throttling each scenario names. "
      "With `limit_rate`, the first write of each "
      "response (up to 2 MiB) is not delayed, as real origins burst before their cap")
    w("- Throttling (nginx `limit_rate`, per request: per connection over HTTP/1.1, per stream over HTTP/2): "
      "`/cdn/` 4 MiB/s; `/uneven/` 512 KiB/s for every connection whose serial number `$connection` "
      "ends in 0 or 5 (exactly 1 in 5, by a `map`), 4 MiB/s for the others; `/limited/` 4 MiB/s and "
      "`limit_conn` 4 per client address (503 beyond); `/h2/` (HTTPS, HTTP/2 by ALPN, self-signed "
      "RSA-2048 certificate made at run time) 4 MiB/s; `/fast/` unlimited. The serial counter is global "
      "(all tools, probes and health checks), so *which* of a tool's connections are slow varies from run to run")
    for p in metas.get("probe", []):
        cap, size, wall = p[0] == "1", int(p[1]), float(p[2])
        w(f"- Link probe: `curl` of {size // MIB} MiB via `/fast/` "
          + (f"with the cap: {size / MIB / wall:.1f} MiB/s (cap {link_bps / 8 / MIB:.2f} MiB/s incl. headers)"
             if cap else f"without cap: {size / MIB / wall:.1f} MiB/s"))
    w(f"- Each run: `{meta.get('wrapper', '')}`; wall time from timestamps around that "
      f"(includes ~{meta.get('wrapper_ms', '?')} ms wrapper start-up, measured with `true`); "
      "CPU = user+sys and peak RSS from GNU time (tool process tree; not nginx's)")
    w(f"- Repetitions: {meta.get('reps', '?')} per tool and scenario, tools interleaved "
      "(rep 1: all tools, rep 2: all tools, …; the starting tool rotates per rep); "
      "statistics are medians over successful runs (range in brackets)")
    w(f"- URL: `{meta.get('base_url', '')}/<location>/f-<size>.bin`"
      + (f" (h2: `{meta.get('tls_url')}/h2/f-<size>.bin`)" if meta.get("tls_url") else "")
      + "; every download is checked against the SHA-256 of the generated random file, then deleted; "
      "before each scenario one untimed `curl` download of its file via `/fast/` warms the page cache")
    if meta.get("events"):
        w(f"- vfetch runs with `--json`: one progress line per 100 ms on stdout, into a file "
          "beside its download with the rest of its output; afterwards copied to "
          f"`{meta.get('events')}/<scenario>-<tool>-rep<N>.jsonl` for the throughput plots")
    if meta.get("quick") == "1":
        w("- **--quick** (smaller files, 1 rep by default): indicative only")
    for n in metas.get("note", []):
        w(f"- Note: {n[0]}")
    w("")
    w("Commands (`URL`, `OUT`, `DIR`/`NAME` filled in per run; the tool names in the tables are "
      "`aria2c` for `aria2c -x16` and `aria2c-x4` for `aria2c -x4`):")
    w("")
    w("```")
    for c in metas.get("command", []):
        w(c[1])
    if metas.get("command_many"):
        w("# many (LIST: the 500 URLs, one per line; OUT: the output directory; PORT: a serve started before each run)")
        for c in metas.get("command_many", []):
            w(c[1])
    if metas.get("command_mirrors"):
        w("# mirrors (URL2: the same file on the second host)")
        for c in metas.get("command_mirrors", []):
            w(c[1])
    if metas.get("command_h2"):
        w("# h2 (CERT: the self-signed certificate)")
        for c in metas.get("command_h2", []):
            w(c[1])
    w("```")

    scen_meta = {s[0]: s for s in metas.get("scenario", [])}
    tc_stats = {s[0]: s[1] for s in metas.get("tc_stats", [])}
    scenarios = []
    for r in runs:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])

    summary = []  # (scenario, vfetch stats, peer, peer stats, link-limit time or None)
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
            logs = [per_run[r["i"]] for r in ok if r["i"] in per_run]
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
                "conns": med([float(len(x.conns)) for x in logs]),
                "n503": med([float(x.n503) for x in logs]),
                "protos": sorted(set().union(*[x.protos for x in logs])) if logs else [],
                "slow": sum(len(per_run[r["i"]].slow) for r in tr if r["i"] in per_run),
            }
            for r in tr:
                if r["status"] != "ok":
                    stats[t]["fail"][r["status"]] += 1
        peers = [p for p in PEERS.get(sc, []) if p in stats]
        show_link = sc in LINK_RATIO and limit_t is not None
        hdr = ["tool", "runs OK", "wall s (min–max)", "MiB/s", "CPU s", "peak RSS MiB"]
        for p in peers:
            hdr.append(f"× {p} wall")
            if sc in CPU_RATIO:
                hdr.append(f"× {p} CPU")
        if show_link:
            hdr.append("× link limit")
        hdr.append("conns/run")
        if sc in ("limited", "mirrors"):
            hdr.append("503s/run")
        if sc == "uneven":
            hdr.append("slow conns (all runs)")
        if sc == "h2":
            hdr.append("protocol")
        hdr.append("SHA OK")
        w(md_row(hdr))
        w(md_rule("l" + "r" * (len(hdr) - 1)))
        for t in tools:
            s = stats[t]
            runs_ok = runs_ok_cell(s["ok"], s["n"], s["fail"])
            wall = med_range(s["walls"], 3 if s["wmax"] < 1 else 2)
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
                     fmt(s["cpu"]), fmt(s["rss"], 1)]
            for p in peers:
                cells.append(fmt(ratio(s["wall"], stats[p]["wall"])))
                if sc in CPU_RATIO:
                    cells.append(fmt(ratio(s["cpu"], stats[p]["cpu"])))
            if show_link:
                cells.append(fmt(ratio(s["wall"], limit_t)))
            cells.append(fmt_int_or_half(s["conns"]))
            if sc in ("limited", "mirrors"):
                cells.append(fmt_int_or_half(s["n503"]) if reqs else "—")
            if sc == "uneven":
                cells.append(str(s["slow"]) if reqs else "—")
            if sc == "h2":
                cells.append(", ".join(s["protos"]) or "—")
            cells.append(sha)
            w(md_row(cells))
        if "vfetch" in stats:
            for p in peers:
                summary.append((sc, stats["vfetch"], p, stats[p], limit_t if show_link else None))
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
    for r in reqs:
        if r.uri.startswith("/uneven/") and r.rate > 0:
            un[r.conn] = r.rate
    if un:
        slow = sorted(c for c, r in un.items() if r <= SLOW_RATE)
        consistent = all((c % SLOW_EVERY == 0) == (r <= SLOW_RATE) for c, r in un.items())
        w("")
        w(f"`/uneven/` as applied by nginx: {len(slow)} of {len(un)} connections at 512 KiB/s "
          f"(serials {', '.join(map(str, slow[:20]))}{' …' if len(slow) > 20 else ''}); "
          f"slow exactly when the serial ends in 0 or 5: {'yes' if consistent else '**NO**'}")

    if summary:
        w("")
        w("## Summary: vfetch against the named peers (medians)")
        w("")
        w(md_row(["scenario", "vfetch wall s", "vfetch CPU s", "peer", "peer wall s", "peer CPU s",
                  "× peer wall", "× peer CPU", "× link limit"]))
        w(md_rule("lrrlrrrrr"))
        for sc, v, p, ps, lt in summary:
            w(md_row([f"`{sc}`", fmt(v["wall"]), fmt(v["cpu"]), f"`{p}`" if p else "—",
                      fmt(ps["wall"]) if ps else "—", fmt(ps["cpu"]) if ps else "—",
                      fmt(ratio(v["wall"], ps["wall"])) if ps else "—",
                      fmt(ratio(v["cpu"], ps["cpu"])) if ps else "—",
                      fmt(ratio(v["wall"], lt)) if lt else "—"]))

    w("")
    w("Ratios: `× P wall` = median wall / peer P's median wall, `× P CPU` the same for CPU (user+sys); "
      "`× link limit` = median wall / (size ÷ link rate), where the link is capped. "
      "`conns/run` = distinct TCP connections nginx logged per successful run (median)."
      + (" `503s/run` = requests nginx refused by `limit_conn` per successful run (median)."
         if "limited" in scenarios else "")
      + (" In `uneven`, a single-connection tool that draws a slow connection (1 in 5) needs 8× as "
         "long and usually hits the per-run limit (shown as `timeout`)." if "uneven" in scenarios else ""))
    write_report(L, a.md)


if __name__ == "__main__":
    main()
