#!/usr/bin/env bash
# Slowloris benchmark: does `vfetch serve` still start a player at once while
# many sockets that never finish a request hold it?
#
# The origin is a local nginx (Debian's package in its default configuration,
# nginx.conf.in, no throttling) serving a 16 MiB file (/fast/).  `vfetch serve` runs
# under `ulimit -n 1024`.  Each run opens SOCKETS (default 1,100) connections
# to it, half of which send the start of a request and stop, then a player
# (curl) asks for a fresh entry through serve; its time to the first byte and
# its status are recorded, and the sockets closed.  The same player without
# the sockets is measured in the same run as the baseline.  Target (issue 15):
# the player starts within 1 s.
#
# Usage: Benchmarks/slowloris.sh [options]
#   --reps N             runs (default 5, quick 1)
#   --sockets N          silent sockets per run (default 1100)
#   --no-netns           force the host loopback
#   -h, --help           this text
#
# vfetch is taken from $VFETCH, else <repo>/.build/release/vfetch.
# Results: Benchmarks/results/slowloris-<date>.md and .csv.
# Needs: bash >= 5, nginx, python3, curl, iproute2 (ip).
set -euo pipefail
export LC_ALL=C

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DEFAULT_REPS=5
SOCKETS=1100
while (($#)); do
    common_option "$@"
    if ((NARGS)); then shift "$NARGS"; continue; fi
    case $1 in
        --sockets) SOCKETS=${2:?--sockets needs a value}; shift 2 ;;
        *) die "unknown option: $1 (see --help)" ;;
    esac
done
check_common_options
[[ $SOCKETS =~ ^[0-9]+$ ]] || die "--sockets must be a number"
need_vfetch
find_nginx

make_tmp vfetch-slowloris $((64 << 20))
setup_netns vfslow "ip"
note_loopback
head -c $((16 << 20)) /dev/urandom >"$WWW/film.mp4"
chmod 0644 "$WWW/film.mp4"
NGINX_PORT=$(free_port 8080)
start_nginx "$NGINX_PORT"

# serve under the descriptor limit of the scenario
# shellcheck disable=SC2016  # "$@" is the inner shell's
SERVE_WRAP=(bash -c 'ulimit -n 1024 && exec "$@"' ulimit)
serve_start $((600 * REPS + 60)) "$TMP/cache" "ulimit -n 1024" || die "vfetch serve did not start"

# One run: SOCKETS silent sockets (0 for the baseline), then the player; prints "status ttfb_s".
probe() {  # sockets rep
    inns bash -c 'ulimit -n 8192 && exec python3 - "$@"' probe "$SERVER_PORT" "$1" \
        "$(serve_url "http://127.0.0.1:$NGINX_PORT/fast/film.mp4?run=$2")" <<'PY'
import socket, subprocess, sys
port, count, player_url = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
silent = []
for n in range(count):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
        if n % 2: s.send(b"GET /status HTTP/1.1\r\nHost: 127")
    except OSError:
        pass
    silent.append(s)
player = subprocess.run(["curl", "-s", "-o", "/dev/null", "-m", "10", "-w", "%{http_code} %{time_starttransfer}",
                         player_url], capture_output=True, text=True)
print(player.stdout or "000 10")
for s in silent: s.close()
PY
}

results_base slowloris
CSV="$BASE.csv"; MD="$BASE.md"
RESULT_FILES=("$CSV" "$MD")
echo "run,sockets,status,ttfb_s" >"$CSV"
for ((rep = 1; rep <= REPS; rep++)); do
    read -r code ttfb < <(probe 0 "base$rep")
    echo "$rep,0,$code,$ttfb" >>"$CSV"
    read -r code ttfb < <(probe "$SOCKETS" "$rep")
    echo "$rep,$SOCKETS,$code,$ttfb" >>"$CSV"
    log "run $rep: player status $code, first byte after ${ttfb} s with $SOCKETS silent sockets"
done

python3 - "$CSV" "$MD" "$SOCKETS" "$MODE" "$FILES_FS" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sockets = sys.argv[3]
def runs(n): return [r for r in rows if r["sockets"] == n]
base, loaded = runs("0"), runs(sockets)
med = lambda rs: statistics.median(float(r["ttfb_s"]) for r in rs)
ok = all(r["status"] == "200" for r in loaded) and max(float(r["ttfb_s"]) for r in loaded) <= 1.0
lines = [f"# Slowloris: a player through `vfetch serve` (ulimit -n 1024) while {sockets} silent sockets hold it", "",
         f"network: {sys.argv[4]}; runs: {len(loaded)}; files (the origin's and serve's cache): {sys.argv[5]}", "",
         "| | player status | first byte, median | max |", "|---|---|---:|---:|",
         f"| no silent sockets | {', '.join(sorted(set(r['status'] for r in base)))} | {med(base):.3f} s | {max(float(r['ttfb_s']) for r in base):.3f} s |",
         f"| {sockets} silent sockets | {', '.join(sorted(set(r['status'] for r in loaded)))} | {med(loaded):.3f} s | {max(float(r['ttfb_s']) for r in loaded):.3f} s |",
         "", f"target: every player answered 200 within 1 s: {'met' if ok else 'MISSED'}"]
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
