# shellcheck shell=bash
# What the scripts in Benchmarks/ share: paths, the common options, the temp
# dir (on disk), cleanup, the network namespace and its link cap, nginx,
# `vfetch serve`, timing and metadata.  Sourced right after their
# `set -euo pipefail`.
# shellcheck disable=SC2034  # many variables here are for the scripts that source it

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(git -C "$SCRIPT_DIR" rev-parse --show-toplevel 2>/dev/null || (cd "$SCRIPT_DIR/.." && pwd))
RESULTS_DIR="$SCRIPT_DIR/results"
CACHE_DIR="$RESULTS_DIR/.cache"   # what is made once and kept between runs (clips, streams, venvs)
CONF_TEMPLATE="$SCRIPT_DIR/nginx.conf.in"
PLOTS_PY="$SCRIPT_DIR/plots.py"
VFETCH_BIN=${VFETCH:-$REPO_ROOT/.build/release/vfetch}
# The tool `vfetch-base` is another build (say, main before a change) run beside `vfetch` in the same
# reps, so that the two are compared on the same machine at the same moment.
VFETCH_BASE=${VFETCH_BASE:-}
vfetch_bin() {  # tool: the binary a vfetch tool runs (vfetch-base: $VFETCH_BASE)
    if [[ $1 == vfetch-base ]]; then echo "$VFETCH_BASE"; else echo "$VFETCH_BIN"; fi
}

# the script's own header comment, up to its `set -euo pipefail`
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
log() { printf '%s\n' "$*" >&2; }
die() { log "${0##*/}: error: $*"; exit 2; }

# every download is local: no proxy may take it elsewhere
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY ftp_proxy FTP_PROXY

# ---------------------------------------------------------------- options
QUICK=0
REPS=""
DEFAULT_REPS=3      # without --reps or --quick; a script may set its own before check_common_options
USE_NETNS=1
# The options every script takes.  Looks at "$@" and sets NARGS to how many
# arguments it used: 0 when "$1" is not one of them.
common_option() {
    NARGS=1
    case "$1" in
        --quick) QUICK=1 ;;
        --reps) REPS=${2:?--reps needs a value}; NARGS=2 ;;
        --reps=*) REPS=${1#*=} ;;
        --no-netns) USE_NETNS=0 ;;
        -h|--help) usage; exit 0 ;;
        *) NARGS=0 ;;
    esac
}
check_common_options() {
    if [[ -z $REPS ]]; then REPS=$((QUICK ? 1 : DEFAULT_REPS)); fi
    if ! [[ $REPS =~ ^[0-9]+$ ]] || ((REPS < 1 || REPS > 100)); then die "--reps must be 1..100"; fi
    ((BASH_VERSINFO[0] >= 5)) || die "bash >= 5 needed (EPOCHREALTIME)"
}

find_nginx() {  # sets NGINX_BIN
    NGINX_BIN=$(PATH="$PATH:/usr/sbin:/sbin" command -v nginx || true)
    [[ -n $NGINX_BIN ]] || die "nginx not found (scripts/install-deps.sh bench, or apt-get install nginx)"
    [[ -f $CONF_TEMPLATE ]] || die "missing $CONF_TEMPLATE"
}
need_commands() {  # command...
    local c
    for c in "$@"; do command -v "$c" >/dev/null || die "$c not found (scripts/install-deps.sh bench)"; done
}
need_vfetch() {
    [[ -x $VFETCH_BIN ]] || die "vfetch not found at ${VFETCH_BIN#"$REPO_ROOT"/} (swift build -c release --product vfetch, or set VFETCH)"
}
check_known() {  # what "known values" value...: dies on a value not known
    local what=$1 known=$2 v
    shift 2
    for v; do [[ " $known " == *" $v "* ]] || die "unknown $what '$v' (known: $known)"; done
}

# ---------------------------------------------------------------- cleanup
NS=""
NGINX_PID=""
TMP=""
MEASURE_PID=""      # the measured command (run_timed)
SERVER_PID=""       # the running `vfetch serve` (serve_start)
RESULT_FILES=()     # the CSV first: when it has no run yet, cleanup removes them all

descendants() {  # pid -> the pid and all its descendants (depth-bounded)
    local level=("$1") next kids all=() d p
    for ((d = 0; d < 8 && ${#level[@]}; d++)); do
        all+=("${level[@]}")
        next=()
        for p in "${level[@]}"; do
            mapfile -t kids < <(ps -o pid= --ppid "$p" 2>/dev/null | tr -d ' ')
            next+=("${kids[@]}")
        done
        level=("${next[@]}")
    done
    echo "${all[@]}"
}
kill_tree() {  # pid: SIGKILL it and its descendants, reap it
    local pid
    for pid in $(descendants "$1"); do kill -KILL "$pid" 2>/dev/null; done
    wait "$1" 2>/dev/null
}

HELPER_PIDS=()   # background processes of the script's own (a relay), killed by cleanup
cleanup() {
    local rc=$? i csv=${RESULT_FILES[0]:-}
    set +e
    trap - EXIT INT TERM HUP
    [[ -n $MEASURE_PID ]] && kill_tree "$MEASURE_PID"
    if [[ -n $SERVER_PID ]]; then
        kill_tree "$SERVER_PID"
        [[ -n $SERVE_LOGS ]] && cat -- "$SERVER_LOG" >>"$SERVE_LOGS"
    fi
    for i in "${HELPER_PIDS[@]}"; do kill_tree "$i"; done
    stop_nginx
    if [[ -n $NS ]]; then
        # anything still running in our namespace was started by this script
        for i in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$i" 2>/dev/null; done
        ip netns del "$NS" 2>/dev/null || log "WARNING: could not delete network namespace $NS"
    fi
    [[ -n $TMP && -d $TMP ]] && rm -rf -- "$TMP"
    # an interrupted run that recorded nothing leaves no result files behind
    if [[ -n $csv && -f $csv && $(wc -l <"$csv") -le 1 ]]; then
        rm -rf -- "${RESULT_FILES[@]}"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- temp space
# The origin's files and the tools' outputs go to a directory on disk, as a
# user's downloads do: on tmpfs or ramfs syncing costs nothing, which flatters
# a tool that syncs what it writes.  Sets TMP_PARENT: the first of $TMPDIR,
# /var/tmp and /tmp that is on disk and has the room.
pick_tmp_parent() {  # need_bytes
    local d fs avail tried=""
    for d in ${TMPDIR:+"$TMPDIR"} /var/tmp /tmp; do
        [[ -d $d && -w $d ]] || continue
        fs=$(stat -f -c %T "$d")
        if [[ $fs == tmpfs || $fs == ramfs ]]; then tried+=" $d is $fs;"; continue; fi
        avail=$(df -Pk "$d" | awk 'NR==2 {print $4}')
        if [[ -n $avail ]] && ((avail * 1024 > $1)); then TMP_PARENT=$d; return; fi
        tried+=" $d has $((${avail:-0} / 1024)) MiB free;"
    done
    die "no directory on disk with $(($1 / 1048576)) MiB free for the files and the tools' outputs:$tried" \
        "set TMPDIR to one (tmpfs and ramfs do not count: syncing costs nothing there)"
}
# Sets TMP (removed by cleanup) and in it RUN (nginx's prefix), WWW (its
# document root), OUT (the tools' outputs) and META (the report's metadata,
# written by `meta`); FILES_FS says where they are, for the reports.
make_tmp() {  # name need_bytes
    pick_tmp_parent "$2"
    TMP=$(mktemp -d "$TMP_PARENT/$1.XXXXXX")
    chmod 0755 "$TMP"   # nginx workers run as an unprivileged user when started as root
    RUN="$TMP/run"; WWW="$TMP/www"; OUT="$TMP/out"
    mkdir -p "$RUN/tmp" "$WWW" "$OUT"
    chmod 0755 "$WWW"
    META="$TMP/meta.tsv"; : >"$META"
    FILES_FS=$(df -PT "$TMP" | awk -v d="$TMP_PARENT" 'NR==2 {print $2 " (" $1 "), in " d}')
}
clean_out() { find "$OUT" -mindepth 1 -delete; }
meta() { local IFS=$'\t'; printf '%s\n' "$*" >>"$META"; }

# ---------------------------------------------------------------- network namespace
# A throw-away network namespace NS with its lo up, where nginx and the
# clients run: MODE=netns and INNS the prefix that runs a command in it.
# Otherwise MODE=loopback and NO_NETNS says why: off (--no-netns), root (not
# root), iproute2 (one of the commands missing) or failed (NETNS_ERR: how).
# check_fn, when given, must also succeed in the new namespace.
INNS=()
setup_netns() {  # name "commands needed" [check_fn]
    local c check=${3:-true}
    MODE=loopback; NO_NETNS=""; NETNS_ERR=""; INNS=()
    if ((!USE_NETNS)); then NO_NETNS=off; return 0; fi
    if ((EUID != 0)); then NO_NETNS=root; return 0; fi
    for c in $2; do command -v "$c" >/dev/null || { NO_NETNS=iproute2; return 0; }; done
    NS="$1$$"
    if ip netns add "$NS" 2>"$TMP/netns.err" && ip netns exec "$NS" ip link set lo up 2>>"$TMP/netns.err" \
        && "$check" 2>>"$TMP/netns.err"; then
        MODE=netns
        INNS=(ip netns exec "$NS")
    else
        NO_NETNS=failed
        NETNS_ERR=$(head -c 200 "$TMP/netns.err")
        ip netns del "$NS" 2>/dev/null || true
        NS=""
    fi
}
# When setup_netns fell back to the host loopback: why, on stderr and in NOTES (the report's notes).
note_loopback() {  # [what the run goes without there, e.g. "no link cap"]
    local why lacks=${1:+, $1}
    case $NO_NETNS in
        off) why="--no-netns" ;;
        root) why="not root" ;;
        iproute2) why="iproute2 (ip, tc) missing" ;;
        failed) why="network namespace not usable ($NETNS_ERR)" ;;
        *) return 0 ;;
    esac
    log "NOTE: $why: using the host loopback$lacks"
    NOTES+=("$why: host loopback instead of a network namespace$lacks")
}
inns() { "${INNS[@]}" "$@"; }
# The link cap of e2e.sh, resume.sh and streams.sh: a token bucket on the
# namespace's lo, a CDN's link rather than loopback's.
readonly LINK_RATE=800mbit          # tc tbf rate
readonly LINK_BPS=800000000         # the same in bit/s (tc: 1mbit = 10^6 bit)
readonly TBF_BURST=256kb            # bucket size (tc: 1kb = 1024 bytes)
readonly TBF_LATENCY=100ms          # max queueing delay; sets the queue limit
tbf_works() {  # the cap can be set and removed in the new namespace
    ip netns exec "$NS" tc qdisc replace dev lo root tbf rate $LINK_RATE burst $TBF_BURST latency $TBF_LATENCY \
        && ip netns exec "$NS" tc qdisc del dev lo root
}
setup_link_netns() {  # name: setup_netns, where the cap must work (off until set_cap 1)
    setup_netns "$1" "ip tc" tbf_works
    note_loopback "no link cap"
}
set_cap() {  # 1 = the cap on the namespace's lo, 0 = none
    [[ $MODE == netns ]] || return 0
    inns tc qdisc del dev lo root 2>/dev/null || true
    if [[ $1 == 1 ]]; then
        inns tc qdisc add dev lo root tbf rate $LINK_RATE burst $TBF_BURST latency $TBF_LATENCY
    fi
}
tc_stats() { if [[ $MODE == netns ]]; then inns tc -s qdisc show dev lo | tr -s ' \n' ' '; fi; }
free_port() {  # preferred: the port in the namespace, else any free one of the host
    if [[ $MODE == netns ]]; then echo "$1"; return; fi  # a fresh namespace has every port free
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---------------------------------------------------------------- nginx
# The installed nginx's configuration directory (where Debian's nginx.conf and
# mime.types live), from its --conf-path.
nginx_conf_dir() {
    local p
    p=$("$NGINX_BIN" -V 2>&1 | tr ' ' '\n' | sed -n 's/^--conf-path=//p' | head -n 1)
    dirname "${p:-/etc/nginx/nginx.conf}"
}
# Whether the installed nginx has the modules the TLS server (e2e.sh's h2
# scenario) needs.  Debian 12's `nginx` package has both.
nginx_has_h2() {
    local v; v=$("$NGINX_BIN" -V 2>&1)
    [[ $v == *--with-http_ssl_module* && $v == *--with-http_v2_module* ]]
}
# A self-signed certificate for 127.0.0.1 and localhost in $RUN/tls:
# cert.pem (also the CA file the clients get) and key.pem.
make_tls_cert() {
    command -v openssl >/dev/null || die "openssl not found (needed for the TLS origin)"
    mkdir -p "$RUN/tls"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
        -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -keyout "$RUN/tls/key.pem" -out "$RUN/tls/cert.pem" >"$RUN/tls/openssl.log" 2>&1 \
        || die "openssl could not make a certificate: $(tail -3 "$RUN/tls/openssl.log")"
    chmod 0644 "$RUN/tls/cert.pem"
}
ACCESS=""   # nginx's access log (format "bench")
start_nginx() {  # port [tls_port]: serves WWW (and, with tls_port, HTTPS + HTTP/2 there); sets NGINX_PID, ACCESS
    local port=$1 tls_port=${2:-} i mime
    ACCESS="$RUN/access.log"
    mime="$(nginx_conf_dir)/mime.types"
    [[ -f $mime ]] || die "no mime.types next to nginx's default configuration ($mime)"
    cp -- "$mime" "$RUN/mime.types"   # `include mime.types` is relative to the config's directory
    if [[ -n $tls_port ]]; then
        make_tls_cert
        sed -e "s|@RUN@|$RUN|g" -e "s|@WWW@|$WWW|g" -e "s|@LISTEN@|127.0.0.1:$port|g" \
            -e "s|@LISTEN_MIRROR@|127.0.0.2:$port|g" -e "s|@LISTEN_TLS@|127.0.0.1:$tls_port|g" "$CONF_TEMPLATE" >"$RUN/nginx.conf"
    else
        sed -e '/@TLS{/,/}@TLS/d' -e "s|@RUN@|$RUN|g" -e "s|@WWW@|$WWW|g" -e "s|@LISTEN@|127.0.0.1:$port|g" \
            -e "s|@LISTEN_MIRROR@|127.0.0.2:$port|g" "$CONF_TEMPLATE" >"$RUN/nginx.conf"
    fi
    inns "$NGINX_BIN" -q -t -c "$RUN/nginx.conf" -p "$RUN/" -e "$RUN/error.log" \
        || die "nginx config test failed: $(tail -5 "$RUN/error.log" 2>/dev/null)"
    inns "$NGINX_BIN" -c "$RUN/nginx.conf" -p "$RUN/" -e "$RUN/error.log" \
        || die "nginx failed to start: $(tail -5 "$RUN/error.log" 2>/dev/null)"
    for ((i = 0; i < 100; i++)); do
        if [[ -s $RUN/nginx.pid ]] && inns bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then break; fi
        sleep 0.1
    done
    [[ -s $RUN/nginx.pid ]] || die "nginx did not write its pid file: $(tail -5 "$RUN/error.log" 2>/dev/null)"
    NGINX_PID=$(<"$RUN/nginx.pid")
    inns bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null || die "nginx is not listening on port $port"
    if [[ -n $tls_port ]]; then
        inns bash -c "exec 3<>/dev/tcp/127.0.0.1/$tls_port" 2>/dev/null || die "nginx is not listening on port $tls_port"
    fi
}
stop_nginx() {  # SIGTERM, up to 5 s, then SIGKILL (its workers too); the logs stay
    local i workers
    if [[ -n $NGINX_PID ]] && kill -0 "$NGINX_PID" 2>/dev/null; then
        workers=$(ps -o pid= --ppid "$NGINX_PID" 2>/dev/null || true)
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$NGINX_PID" 2>/dev/null || true
        for i in $workers; do kill -KILL "$i" 2>/dev/null || true; done
    fi
    NGINX_PID=""
}
check_served() {  # url: nginx answers it with 200
    local got
    got=$(inns curl -sf -o /dev/null -w '%{http_code}' "$1" 2>/dev/null) || got="${got:-no answer}"
    [[ $got == 200 ]] || die "nginx does not serve $1 ($got)"
}
log_lines() { if [[ -f $ACCESS ]]; then wc -l <"$ACCESS"; else echo 0; fi; }
save_access_log() { cp -- "$ACCESS" "$1" 2>/dev/null || : >"$1"; }  # dest: a copy for the results

# ---------------------------------------------------------------- measurement
# Runs "$@" in the background, so that a signal to this script is handled at
# once, and waits for it.  Sets R_RC, R_T0, R_T1 and R_WALL (s, from
# EPOCHREALTIME, us resolution).
run_timed() {
    R_RC=0
    R_T0=$EPOCHREALTIME
    "$@" &
    MEASURE_PID=$!
    wait "$MEASURE_PID" || R_RC=$?
    R_T1=$EPOCHREALTIME
    MEASURE_PID=""
    R_WALL=$(awk -v a="$R_T0" -v b="$R_T1" 'BEGIN {printf "%.6f", b - a}')
}
TIME_FMT='%e %U %S %M'
MEASURE_CPU=1   # 0: without GNU time (playback.sh, whose players time themselves)
# Runs "$@" in the namespace under timeout (and GNU time), its output to
# logfile.  Sets what run_timed sets and R_TIME ("%e %U %S %M" of GNU time,
# "nan nan nan nan" without it).
measure() {  # timeout_s logfile cmd...
    local tmo=$1 logf=$2 tf="$TMP/time.out" timer=()
    shift 2
    if ((MEASURE_CPU)); then timer=(/usr/bin/time -f "$TIME_FMT" -o "$tf"); fi
    rm -f "$tf"
    run_timed "${INNS[@]}" "${timer[@]}" timeout -k 5 "$tmo" "$@" >"$logf" 2>&1 </dev/null
    # time prints "Command exited with non-zero status N" first on failure
    R_TIME=$(tail -n 1 "$tf" 2>/dev/null || true)
    [[ $R_TIME =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+\ [0-9]+$ ]] || R_TIME="nan nan nan nan"
}
status_of() {  # exit code -> status word
    if (($1 == 0)); then echo ok; elif (($1 == 124 || $1 == 137)); then echo timeout; else echo "exit_$1"; fi
}
# Sets WRAP_MS, the median wall time of five runs of /bin/true with measure:
# the wrapper's own start-up, which every run includes.
# (Not in $(...): the runs must stay killable.)
measure_wrapper() {
    local i walls=()
    for i in 1 2 3 4 5; do measure 5 /dev/null true; walls+=("$R_WALL"); done
    WRAP_MS=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)] * 1000}')
}
load1() { cut -d' ' -f1 /proc/loadavg; }
random_delay() {  # min_ms span_ms: seconds, at random in [min, min + span]
    awk -v a="$1" -v s="$2" -v r="$RANDOM" 'BEGIN {printf "%.3f", (a + s * r / 32767) / 1000}'
}

# ---------------------------------------------------------------- vfetch serve
SERVE_READY_S=10    # how long serve_start waits for /status
SERVE_ARGS=""       # a script's --serve-args, appended to every `vfetch serve`
SERVE_WRAP=()       # what runs `vfetch serve` (slowloris.sh: a lower descriptor limit)
SERVE_LOGS=""       # when set, where serve_stop appends each server's output
SERVER_N=0
# `vfetch serve` on cache_dir in the namespace, on a new port each time (no
# TIME_WAIT clash), stopped by timeout after life_s.  Sets SERVER_PID,
# SERVER_PORT and SERVER_LOG; returns 1, having stopped it, when it does not
# answer /status within SERVE_READY_S.
serve_start() {  # life_s cache_dir label [serve args...]
    local life=$1 cache=$2 label=$3 i extra=()
    shift 3
    [[ -n $SERVE_ARGS ]] && read -r -a extra <<<"$SERVE_ARGS"
    SERVER_N=$((SERVER_N + 1))
    SERVER_PORT=$(free_port $((18090 + SERVER_N % 1000)))
    SERVER_LOG="$TMP/serve-$SERVER_N.log"
    mkdir -p "$cache"
    echo "==> vfetch serve #$SERVER_N ($label, from $EPOCHREALTIME): --port $SERVER_PORT --cache-dir CACHE_DIR $* ${extra[*]}" >"$SERVER_LOG"
    # timeout (which forwards SIGINT to vfetch) also gives vfetch a default
    # SIGINT disposition, which a background job of a script does not have
    "${INNS[@]}" timeout -k 5 "$life" "${SERVE_WRAP[@]}" "$VFETCH_BIN" serve --port "$SERVER_PORT" --cache-dir "$cache" \
        "$@" "${extra[@]}" >>"$SERVER_LOG" 2>&1 </dev/null &
    SERVER_PID=$!
    for ((i = 0; i < SERVE_READY_S * 10; i++)); do
        if inns curl -sf -m 1 -o /dev/null "http://127.0.0.1:$SERVER_PORT/status"; then return 0; fi
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    log "   vfetch serve did not answer http://127.0.0.1:$SERVER_PORT/status within ${SERVE_READY_S} s:"
    sed -n '2,6s/^/      | /p' "$SERVER_LOG" >&2
    serve_stop
    return 1
}
serve_stop() {  # SIGINT, up to 10 s, then SIGKILL
    local i
    [[ -n $SERVER_PID ]] || return 0
    kill -INT "$SERVER_PID" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        log "   vfetch serve ignored SIGINT for 10 s; killing it"
        kill_tree "$SERVER_PID"
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    if [[ -n $SERVE_LOGS ]]; then cat -- "$SERVER_LOG" >>"$SERVE_LOGS" 2>/dev/null || true; fi
}
url_quote() {  # text: percent-encoded, reserved characters too
    python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"
}
serve_url() {  # origin URL: the player's URL for it through the running server
    echo "http://127.0.0.1:$SERVER_PORT/media?url=$(url_quote "$1")"
}

# ---------------------------------------------------------------- metadata
ver() { "$@" 2>&1 | head -n 1 || true; }
meta_common() {  # what every report shows about the run and the machine
    meta date "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    meta mode "$MODE"
    meta quick "$QUICK"
    meta reps "$REPS"
    meta nproc "$(nproc)"
    meta mem "$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
    meta cpu "$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
    meta kernel "$(uname -srm)"
    # shellcheck disable=SC1091
    meta os "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}")"
    meta files_fs "$FILES_FS"
    meta version nginx "$(ver "$NGINX_BIN" -v)"
}
results_base() {  # name: sets STAMP and BASE, the prefix of the run's result files
    STAMP=$(date +%Y%m%d-%H%M%S)
    mkdir -p "$RESULTS_DIR"
    BASE="$RESULTS_DIR/$1-$STAMP"
}
meta_vfetch() {  # its version and the source it was built from
    local v
    v=$(timeout 5 "$VFETCH_BIN" --version 2>/dev/null | head -n 1) || v=""
    meta version vfetch "${v:-unknown (no --version)}; ${VFETCH_BIN#"$REPO_ROOT"/}; $(repo_state)"
}
repo_state() {  # the source the vfetch binary was built from, as far as git knows
    echo "repo $(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo 'without commits')$(git -C "$REPO_ROOT" status --porcelain 2>/dev/null | grep -q . && echo ' + uncommitted changes')"
}
meta_wrapper() {  # what else runs each measured command
    local ns="" time_cmd=""
    [[ $MODE == netns ]] && ns="ip netns exec NS "
    ((MEASURE_CPU)) && time_cmd="/usr/bin/time -f '$TIME_FMT' -o T "
    meta wrapper "$ns${time_cmd}timeout -k 5 LIMIT <command>"
}
