#!/usr/bin/env bash
# Resume benchmark: how much `vfetch get` downloads again after kill -9.
#
# The origin is e2e.sh's cdn scenario: a local nginx (Debian's package in its
# default configuration, nginx.conf.in) at 4 MiB/s per connection
# (`limit_rate 4m`) behind an 800 Mbit/s link cap (`tc tbf` on the loopback of
# a throw-away network namespace; without root, the host loopback and no cap).  One download of a 1 GiB random file is
# killed with SIGKILL at KILLS random moments, each 0.2-0.8 s after that
# run's start, and resumed every time by the same command; the last run goes
# to the end, and the file's SHA-256 must equal the source's.
#
# Per run: received = the bytes that crossed the namespace's loopback in that
# run (its rx_bytes counter, read right after the kill: payload plus a little
# TCP/IP overhead; without the namespace, nginx's $body_bytes_sent, which also
# counts what was still in nginx's socket buffers), saved = how much the
# manifest's bytes_done grew (`vfetch status --json`), waste = received -
# saved, and in flight = the bytes queued unread in vfetch's sockets just
# before the kill (`ss`).  lost = waste - in flight is what the kill threw
# away of what vfetch had received: not yet checkpointed, in its write
# buffers, or in blocks only partly written.  Target (issue 3): re-download
# after a kill <= 16 MiB + the bytes in flight, i.e. lost <= 16 MiB.
#
# Usage: Benchmarks/resume.sh [options]
#   --quick              256 MiB, 10 kills
#   --kills N            kills (default 20, quick 10)
#   --no-netns           force the host loopback (no link cap)
#   -h, --help           this text
#
# vfetch is taken from $VFETCH, else <repo>/.build/release/vfetch.
# Results: Benchmarks/results/resume-<date>.md and .csv (one line per run).
# Needs: bash >= 5, nginx >= 1.17, python3, coreutils, iproute2 (ip, tc).
set -euo pipefail
export LC_ALL=C

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly MIB=1048576
readonly KILL_MIN_MS=200 KILL_SPAN_MS=600
readonly LOG_SETTLE_S=0.5   # nginx logs an aborted response at its next write

KILLS=""
while (($#)); do
    common_option "$@"   # --quick, --reps (unused), --no-netns, --help
    if ((NARGS)); then shift "$NARGS"; continue; fi
    case "$1" in
        --kills) KILLS=${2:?--kills needs a value}; shift ;;
        --kills=*) KILLS=${1#*=} ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done
check_common_options
[[ -z $KILLS ]] && KILLS=$((QUICK ? 10 : 20))
[[ $KILLS =~ ^[0-9]+$ ]] && ((KILLS >= 1 && KILLS <= 200)) || die "--kills must be 1..200"
SIZE=$(((QUICK ? 256 : 1024) * MIB))

find_nginx
need_vfetch
need_commands python3

make_tmp vfresume $((2 * SIZE + 64 * MIB))
setup_link_netns vfresume
set_cap 1
PORT=$(free_port 18080)
head -c "$SIZE" /dev/urandom >"$WWW/f.bin"
chmod 0644 "$WWW/f.bin"
SHA=$(sha256sum "$WWW/f.bin" | awk '{print $1}')
URL="http://127.0.0.1:$PORT/cdn/f.bin"
start_nginx "$PORT"

received() {  # a counter of the bytes that reached the client: rx_bytes of the namespace's lo, or nginx's log
    if [[ $MODE == netns ]]; then
        inns cat /sys/class/net/lo/statistics/rx_bytes
    else
        awk '$8 == "/cdn/f.bin" {s += $5} END {printf "%d", s}' "$ACCESS"
    fi
}
in_flight() {  # bytes received by the kernel but not yet read by vfetch: its sockets' Recv-Q
    inns ss -tnH state established "( dport = :$PORT )" | awk '{s += $1} END {printf "%d", s}'
}
mib() { awk -v b="$1" 'BEGIN {printf "%7.1f", b / 1048576}'; }
bytes_done() {  # what the manifest says is saved (0 when there is none)
    "$VFETCH_BIN" status "$OUT/f.bin" --json 2>/dev/null \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["bytes_done"])' 2>/dev/null || echo 0
}

results_base resume
CSV="$BASE.csv"
MD="$BASE.md"
RESULT_FILES=("$CSV")
echo "run,killed_after_s,exit_code,received_bytes,in_flight_bytes,saved_before,saved_after,lost_bytes" >"$CSV"

log "== resume: $((SIZE / MIB)) MiB via /cdn/ ($MODE), $KILLS kills at ${KILL_MIN_MS}-$((KILL_MIN_MS + KILL_SPAN_MS)) ms, then to the end"
T_START=$EPOCHREALTIME
for ((run = 1; run <= KILLS + 1; run++)); do
    start=$(received)
    before=$(bytes_done)
    "${INNS[@]}" "$VFETCH_BIN" get "$URL" -o "$OUT/f.bin" --quiet </dev/null >"$TMP/run.log" 2>&1 &
    MEASURE_PID=$!
    delay="" flight=0
    if ((run <= KILLS)); then
        delay=$(random_delay "$KILL_MIN_MS" "$KILL_SPAN_MS")
        sleep "$delay"
        flight=$(in_flight)
        # ip netns exec execs vfetch, so the pid is vfetch's own
        kill -KILL "$MEASURE_PID" 2>/dev/null || true
    fi
    rc=0; wait "$MEASURE_PID" 2>/dev/null || rc=$?
    MEASURE_PID=""
    got=$(($(received) - start))
    sleep "$LOG_SETTLE_S"
    after=$(bytes_done)
    if ((run > KILLS || rc == 0)); then
        ((rc == 0)) || die "the last run failed (exit $rc): $(head -c 300 "$TMP/run.log")"
        after=$SIZE   # done: the manifest is gone
    fi
    lost=$((got - (after - before) - flight))
    echo "$run,${delay:-},$rc,$got,$flight,$before,$after,$lost" >>"$CSV"
    printf '   run %2d  %-7s exit %3d  received %s MiB  in flight %s MiB  saved %s -> %s MiB  lost %s MiB\n' "$run" \
        "${delay:+${delay}s}" "$rc" "$(mib "$got")" "$(mib "$flight")" "$(mib "$before")" "$(mib "$after")" "$(mib "$lost")" >&2
    ((rc == 0)) && break
done
WALL=$(awk -v a="$T_START" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
[[ -f $OUT/f.bin && ! -e $OUT/f.bin.part ]] || die "no finished file"
GOT=$(sha256sum "$OUT/f.bin" | awk '{print $1}')
[[ $GOT == "$SHA" ]] && SHA_OK=yes || SHA_OK=NO

python3 - "$CSV" "$MD" "$SIZE" "$SHA_OK" "$MODE" "$WALL" "$(repo_state)" "$FILES_FS" <<'EOF'
import csv, statistics, sys
path, md, size, sha_ok, mode, wall, repo, files = sys.argv[1:]
size = int(size); mib = 1 << 20
rows = list(csv.DictReader(open(path)))
kills = [r for r in rows if r["killed_after_s"]]
counted = "bytes over the namespace's loopback" if mode == "netns" else "nginx's $body_bytes_sent"
out = [
    "# Resume after kill -9 (`Benchmarks/resume.sh`)", "",
    f"- vfetch: {repo}; origin: nginx `/cdn/` (4 MiB/s per connection), "
    + ("a network namespace with an 800 Mbit/s link cap" if mode == "netns" else "host loopback, no link cap"),
    f"- files (the origin's and vfetch's output): {files}",
    f"- file: {size // mib} MiB; {len(kills)} kills (SIGKILL 0.2-0.8 s into each run), then one run to the end; {wall} s in all",
    f"- final SHA-256 equal to the source's: **{sha_ok}**",
    f"- received in all ({counted}): {sum(int(r['received_bytes']) for r in rows) / mib:.1f} MiB for the {size // mib} MiB file", "",
]
if kills:
    col = lambda k: [int(r[k]) / mib for r in kills]
    lost, flight = col("lost_bytes"), col("in_flight_bytes")
    out += [
        "| per kill, MiB | median | max | mean |", "|---|---:|---:|---:|",
        f"| lost (received - saved - in flight) | {statistics.median(lost):.1f} | {max(lost):.1f} | {statistics.mean(lost):.1f} |",
        f"| in flight (unread in the sockets) | {statistics.median(flight):.1f} | {max(flight):.1f} | {statistics.mean(flight):.1f} |", "",
        "Target (issue 3): re-download after a kill <= 16 MiB + the bytes in flight, i.e. lost <= 16 MiB.", "",
    ]
out += ["| run | killed after s | exit | received MiB | in flight MiB | saved before MiB | saved after MiB | lost MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|"]
for r in rows:
    f = lambda k: f"{int(r[k]) / mib:.1f}"
    out.append(f"| {r['run']} | {r['killed_after_s'] or 'to the end'} | {r['exit_code']} | {f('received_bytes')} | "
               f"{f('in_flight_bytes')} | {f('saved_before')} | {f('saved_after')} | {f('lost_bytes')} |")
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out[:12]))
EOF
log ""
log "results: ${MD#"$REPO_ROOT"/}  (raw runs: ${CSV#"$REPO_ROOT"/})"
[[ $SHA_OK == yes ]] || { log "resume.sh: FAILED: the resumed file's SHA-256 differs from the source's"; exit 1; }
