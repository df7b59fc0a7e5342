#!/usr/bin/env bash
# End-to-end throughput benchmark: vfetch against aria2c, axel, curl and wget.
#
# A local nginx (Debian's package, in Debian's default configuration plus only
# the throttling each scenario names: see nginx.conf.in) serves random files.
# As root it runs in a throw-away network namespace whose loopback carries an
# 800 Mbit/s token-bucket link cap; all clients run in the same namespace.
# Without root (or when the namespace cannot be created) it falls back to the
# host's loopback without the link cap and says so.
#
# Scenarios (sizes without / with --quick; "cap": the 800 Mbit/s link cap):
#   cdn          256 / 64 MiB, 4 MiB/s per connection, cap
#   uneven       256 / 64 MiB, 1 connection in 5 (serial numbers ending in 0
#                or 5) at 512 KiB/s, the others at 4 MiB/s, cap
#   limited      256 / 64 MiB, 4 MiB/s per connection and at most 4
#                connections per client address (nginx limit_conn; 503
#                beyond), cap; peers: aria2c -x4 (aria2c-x4) and aria2c -x16
#   h2           256 / 64 MiB over HTTPS + HTTP/2 (self-signed certificate made
#                at run time), 4 MiB/s per request (= per stream), cap;
#                vfetch (--cacert), aria2c -x16 (HTTP/1.1 over TLS) and curl
#   unthrottled  1 GiB / 256 MiB, no rate limit, no cap
#   mirrors      256 / 64 MiB from /limited/ and the same file from a second
#                host (127.0.0.2, /limited-mirror/: the same rule, counted
#                apart), cap; vfetch --mirror, aria2c -x4 and -x16 with both
#                URIs; the limited scenario is the one-host figure
#   small        2 MiB, as cdn
#   many         500 files of 64 KiB, as cdn: vfetch get -i LIST -j 16, the
#                queue (vfetch-queue: one `vfetch add` of the 500 URLs into a
#                running serve --max-downloads 16, then `vfetch wait`) and
#                aria2c -j 16 -i LIST; every file's SHA-256 checked
#   huge         vfetch's memory over a 4 GiB file (quick: 1 GiB) at
#                4 MiB/s per connection, no cap; only vfetch runs there
#
# Usage: Benchmarks/e2e.sh [options]
#   --quick              the smaller sizes above, 1 rep
#   --reps N             repetitions per scenario and tool (default 5, quick 1)
#   --scenario NAME      one of the scenarios above (repeatable or
#                        comma-separated; default: all of them)
#   --tools LIST         comma-separated subset of vfetch,aria2c,aria2c-x4,axel,curl,wget
#                        (default), vfetch-nocp (vfetch without periodic
#                        checkpoints) and vfetch-base (the binary in
#                        $VFETCH_BASE, e.g. main before a change).  Each scenario runs the listed tools it
#                        has: aria2c-x4 only in limited; in h2 vfetch, aria2c
#                        and curl; in huge vfetch only
#   --timeout SEC        per-run time limit (default: derived from size and rate)
#   --vfetch-args ARGS   extra arguments appended to the vfetch command (e.g. "-c 8")
#   --no-netns           force the plain-loopback fallback (no link cap)
#   -h, --help           this text
#
# vfetch is taken from $VFETCH, else <repo>/.build/release/vfetch; when it is
# missing it is skipped.
# Results: Benchmarks/results/e2e-<date>.md, .csv (raw runs), .access.log
# (nginx's log of the runs), .events/ (vfetch's `--json` progress lines, one
# file per run) and -throughput-<scenario>.png (with matplotlib, by plots.py).
# Needs: bash >= 5, nginx >= 1.17 (for h2 with the http_ssl and http_v2
# modules, as Debian's `nginx` package has them), openssl (h2), python3,
# /usr/bin/time (GNU), coreutils, iproute2 (ip, tc) for the namespace;
# matplotlib for the plots.
set -euo pipefail
export LC_ALL=C

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPORT_PY="$SCRIPT_DIR/e2e_report.py"

# ---------------------------------------------------------------- constants
readonly MIB=1048576
readonly PER_CONN_BPS=$((4 * MIB))  # nginx limit_rate 4m in /cdn/, /uneven/, /limited/ and /h2/
readonly ALL_SCENARIOS=(cdn uneven limited mirrors h2 unthrottled small many huge)
readonly ALL_TOOLS=(vfetch aria2c aria2c-x4 axel curl wget vfetch-nocp vfetch-base vfetch-queue)
readonly DEFAULT_TOOLS=(vfetch aria2c aria2c-x4 axel curl wget vfetch-queue)
readonly MANY_FILES=500 MANY_SIZE=65536 MANY_AT_ONCE=16
DEFAULT_REPS=5   # medians of 5 (lib.sh: check_common_options)

# ---------------------------------------------------------------- options
SCENARIOS=()
TOOLS=("${DEFAULT_TOOLS[@]}")
TIMEOUT_OVERRIDE=""
VFETCH_ARGS=""

while (($#)); do
    common_option "$@"   # --quick, --reps, --no-netns, --help
    if ((NARGS)); then shift "$NARGS"; continue; fi
    case "$1" in
        --scenario) IFS=, read -r -a _s <<<"${2:?--scenario needs a value}"; SCENARIOS+=("${_s[@]}"); shift ;;
        --scenario=*) IFS=, read -r -a _s <<<"${1#*=}"; SCENARIOS+=("${_s[@]}") ;;
        --tools) IFS=, read -r -a TOOLS <<<"${2:?--tools needs a value}"; shift ;;
        --tools=*) IFS=, read -r -a TOOLS <<<"${1#*=}" ;;
        --timeout) TIMEOUT_OVERRIDE=${2:?--timeout needs a value}; shift ;;
        --timeout=*) TIMEOUT_OVERRIDE=${1#*=} ;;
        --vfetch-args) VFETCH_ARGS=${2?--vfetch-args needs a value}; shift ;;
        --vfetch-args=*) VFETCH_ARGS=${1#*=} ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done
check_common_options
[[ -z $TIMEOUT_OVERRIDE || $TIMEOUT_OVERRIDE =~ ^[0-9]+$ ]] || die "--timeout must be whole seconds"
((${#SCENARIOS[@]})) || SCENARIOS=("${ALL_SCENARIOS[@]}")
check_known scenario "${ALL_SCENARIOS[*]}" "${SCENARIOS[@]}"
check_known tool "${ALL_TOOLS[*]}" "${TOOLS[@]}"

if ((QUICK)); then
    MEDIUM=$((64 * MIB)); LARGE=$((256 * MIB)); HUGE=$((1024 * MIB))
else
    MEDIUM=$((256 * MIB)); LARGE=$((1024 * MIB)); HUGE=$((4096 * MIB))
fi
SMALL=$((2 * MIB))

scenario_size() {
    case $1 in cdn|uneven|limited|mirrors|h2) echo "$MEDIUM" ;; unthrottled) echo "$LARGE" ;; small) echo "$SMALL" ;; many) echo $((MANY_FILES * MANY_SIZE)) ;; huge) echo "$HUGE" ;; esac
}
scenario_location() {
    case $1 in cdn|small|many|huge) echo cdn ;; uneven) echo uneven ;; limited|mirrors) echo limited ;; h2) echo h2 ;; unthrottled) echo fast ;; esac
}
scenario_capped() {
    case $1 in unthrottled|huge) echo 0 ;; *) echo 1 ;; esac
}
scenario_tools() {  # the tools a scenario runs (of those selected)
    local peers
    case $1 in
        limited) peers="aria2c-x4 aria2c" ;;
        mirrors) echo "vfetch aria2c-x4 aria2c"; return ;;   # vfetch-base may know no --mirror
        many) echo "vfetch vfetch-queue aria2c"; return ;;
        h2) peers="aria2c curl" ;;
        huge) peers="" ;;             # vfetch's memory only
        *) peers="aria2c axel curl wget" ;;
    esac
    echo "vfetch vfetch-base vfetch-nocp $peers"
}
scenario_timeout() {  # per-run limit in seconds
    local size; size=$(scenario_size "$1")
    if [[ -n $TIMEOUT_OVERRIDE ]]; then echo "$TIMEOUT_OVERRIDE"; return; fi
    if [[ $1 == unthrottled ]]; then
        echo $((size / (16 * MIB) + 20))                 # >= 16 MiB/s
    else
        echo $((size * 3 / 2 / PER_CONN_BPS + 20))       # 1.5x one 4 MiB/s connection
    fi
}

# ---------------------------------------------------------------- tools
NOTES=()
ACTIVE_TOOLS=()
for t in "${TOOLS[@]}"; do
    if [[ $t == vfetch* ]]; then
        bin=$(vfetch_bin "$t")
        if [[ -n $bin && -x $bin ]]; then
            ACTIVE_TOOLS+=("$t")
        else
            log "NOTE: $t binary not found at '${bin#"$REPO_ROOT"/}' (set \$VFETCH / \$VFETCH_BASE or run 'swift build -c release'); skipping it"
            NOTES+=("$t skipped: binary not found ('${bin#"$REPO_ROOT"/}')")
        fi
    elif command -v "${t%%-*}" >/dev/null 2>&1; then   # aria2c-x4 is aria2c
        ACTIVE_TOOLS+=("$t")
    else
        log "NOTE: $t not installed; skipping it"
        NOTES+=("$t skipped: not installed")
    fi
done
((${#ACTIVE_TOOLS[@]})) || die "no tool to run"
sc_tools() {  # scenario: the active tools it runs, in --tools order
    local t
    for t in "${ACTIVE_TOOLS[@]}"; do
        if [[ " $(scenario_tools "$1") " == *" $t "* ]]; then echo "$t"; fi
    done
}
_s=()
for s in "${SCENARIOS[@]}"; do
    if [[ -n $(sc_tools "$s") ]]; then
        _s+=("$s")
    else
        log "NOTE: $s skipped: none of the selected tools runs in it (it runs: $(scenario_tools "$s"))"
        NOTES+=("$s skipped: none of the selected tools runs in it")
    fi
done
((${#_s[@]})) || die "no scenario to run with these tools"
SCENARIOS=("${_s[@]}")

find_nginx
# h2 needs nginx's http_ssl and http_v2 modules (Debian's `nginx` package has
# them) and openssl for the certificate
if [[ " ${SCENARIOS[*]} " == *" h2 "* ]]; then
    why=""
    nginx_has_h2 || why="this nginx lacks --with-http_ssl_module or --with-http_v2_module (nginx -V); install Debian's nginx package"
    command -v openssl >/dev/null || why="openssl not found"
    if [[ -n $why ]]; then
        log "NOTE: h2 skipped: $why"
        NOTES+=("h2 skipped: $why")
        _s=(); for s in "${SCENARIOS[@]}"; do [[ $s == h2 ]] || _s+=("$s"); done
        SCENARIOS=("${_s[@]}")
        ((${#SCENARIOS[@]})) || die "no scenario to run"
    fi
fi
need_commands /usr/bin/time python3 timeout

# The command line for one download.  Sets CMD (array).  With a CA file (the
# h2 scenario's self-signed certificate) each tool gets its own option for it.
# aria2c and aria2c-x4 run with aria2's own retry defaults: against /limited/
# aria2c -x16 finishes without any retry option (the connections nginx answers
# with 503 are dropped and the others, keep-alive, fetch their pieces), so it
# runs as a user would run it; --max-tries=0 --retry-wait=1 would make it
# retry the 503s every second (and finish a little sooner, on fresh per-request
# bursts), which is aria2 told about the host rather than aria2's defaults.
MIRROR_URL=""   # the mirrors scenario's second source: vfetch gets it as --mirror, aria2c as a second URI
tool_cmd() {  # tool url outdir outname [cafile]
    local tool=$1 url=$2 dir=$3 name=$4 ca=${5:-}
    local extra=() cacert=() cacertificate=() mirror=() uris=("$2")
    if [[ -n $ca ]]; then cacert=(--cacert "$ca"); cacertificate=("--ca-certificate=$ca"); fi
    if [[ -n $MIRROR_URL ]]; then mirror=(--mirror "$MIRROR_URL"); uris+=("$MIRROR_URL"); fi
    case $tool in
        vfetch|vfetch-base)
            [[ -n $VFETCH_ARGS ]] && read -r -a extra <<<"$VFETCH_ARGS"
            CMD=("$(vfetch_bin "$tool")" get "$url" -o "$dir/$name" --json "${mirror[@]}" "${cacert[@]}" "${extra[@]}") ;;
        vfetch-nocp)  # vfetch without periodic checkpoints: what checkpointing costs
            CMD=("$VFETCH_BIN" get "$url" -o "$dir/$name" --json --checkpoint-interval 0 "${cacert[@]}") ;;
        aria2c)    CMD=(aria2c -x16 -s16 -k1M "${cacertificate[@]}" --allow-overwrite=true --file-allocation=none -q -d "$dir" -o "$name" "${uris[@]}") ;;
        aria2c-x4) CMD=(aria2c -x4 -s4 -k1M "${cacertificate[@]}" --allow-overwrite=true --file-allocation=none -q -d "$dir" -o "$name" "${uris[@]}") ;;
        axel)   CMD=(axel -q -n 16 -o "$dir/$name" "$url") ;;
        curl)   CMD=(curl -s "${cacert[@]}" -o "$dir/$name" "$url") ;;
        wget)   CMD=(wget -q "${cacertificate[@]}" -O "$dir/$name" "$url") ;;
    esac
}
# many: the command for one tool, reading the URL list LIST, writing into DIR.
# vfetch-queue's server is started on QUEUE_CACHE before each run, untimed.
QUEUE_CACHE=""   # set below, in the temp dir
many_cmd() {  # tool list dir
    local tool=$1 list=$2 dir=$3
    case $tool in
        vfetch) CMD=("$VFETCH_BIN" get -i "$list" -d "$dir" -j "$MANY_AT_ONCE" --quiet) ;;
        vfetch-queue)  # the server running on QUEUE_CACHE
            # shellcheck disable=SC2016  # $1.. are the inner shell's arguments
            CMD=(bash -c '"$1" add --cache-dir "$2" -d "$3" $(cat "$4") >/dev/null && "$1" wait --cache-dir "$2"' _
                "$VFETCH_BIN" "$QUEUE_CACHE" "$dir" "$list") ;;
        aria2c) CMD=(aria2c -j "$MANY_AT_ONCE" -i "$list" -d "$dir" --allow-overwrite=true --file-allocation=none -q) ;;
    esac
}
tool_cmd_display() {  # tool [CERT]: the same with placeholders, for the report
    local tool=$1 shown
    tool_cmd "$tool" URL DIR NAME "${2:-}"
    CMD[0]=${CMD[0]##*/}
    shown=$(printf '%q ' "${CMD[@]}")
    shown=${shown% }
    printf '%s' "${shown//DIR\/NAME/OUT}"
}

# ---------------------------------------------------------------- temp space
NEED_BYTES=0
declare -A NEED_SIZES=()
for s in "${SCENARIOS[@]}"; do [[ $s == many ]] || NEED_SIZES[$(scenario_size "$s")]=1; done
for s in "${SCENARIOS[@]}"; do
    if ((USE_NETNS && EUID == 0)) && [[ $(scenario_capped "$s") == 1 ]]; then NEED_SIZES[$MEDIUM]=1; fi  # link probe file
done
LARGEST=0
for sz in "${!NEED_SIZES[@]}"; do NEED_BYTES=$((NEED_BYTES + sz)); ((sz > LARGEST)) && LARGEST=$sz; done
NEED_BYTES=$((NEED_BYTES + 2 * LARGEST + 64 * MIB))

make_tmp vfbench "$NEED_BYTES"

# ---------------------------------------------------------------- network namespace
setup_link_netns vfbench

PORT=$(free_port 18080)
BASE_URL="http://127.0.0.1:$PORT"
TLS_PORT=""
if [[ " ${SCENARIOS[*]} " == *" h2 "* ]]; then
    TLS_PORT=$(free_port 18443)
    while [[ $TLS_PORT == "$PORT" ]]; do TLS_PORT=$(free_port 18443); done
fi
scenario_url() {  # scenario file
    if [[ $1 == h2 ]]; then
        echo "https://127.0.0.1:$TLS_PORT/h2/$2"
    else
        echo "$BASE_URL/$(scenario_location "$1")/$2"
    fi
}
CA_FILE=""   # set by start_nginx's certificate when there is an h2 scenario

# ---------------------------------------------------------------- files
declare -A FILE_OF=() SHA_OF=()
log "generating test files in a temp dir on $FILES_FS ..."
for sz in $(printf '%s\n' "${!NEED_SIZES[@]}" | sort -n); do
    f="f-$sz.bin"
    head -c "$sz" /dev/urandom >"$WWW/$f"
    chmod 0644 "$WWW/$f"
    FILE_OF[$sz]=$f
    SHA_OF[$sz]=$(sha256sum "$WWW/$f" | awk '{print $1}')
    log "  $f  $((sz / MIB)) MiB  sha256 ${SHA_OF[$sz]:0:16}..."
done

QUEUE_CACHE="$TMP/queue-cache"
# many: the small files under many/, their URL list and their checksums (as `sha256sum` prints them)
if [[ " ${SCENARIOS[*]} " == *" many "* ]]; then
    mkdir -p "$WWW/many"
    for ((i = 0; i < MANY_FILES; i++)); do head -c "$MANY_SIZE" /dev/urandom >"$WWW/many/m$i.bin"; done
    chmod -R a+rX "$WWW/many"
    (cd "$WWW/many" && sha256sum -- *.bin | sort -k2) >"$TMP/many.sha256"
    for ((i = 0; i < MANY_FILES; i++)); do echo "$BASE_URL/cdn/many/m$i.bin"; done >"$TMP/many.list"
    log "  many/  $MANY_FILES files of $((MANY_SIZE / 1024)) KiB"
fi

# ---------------------------------------------------------------- nginx
start_nginx "$PORT" "$TLS_PORT"
[[ -n $TLS_PORT ]] && CA_FILE="$RUN/tls/cert.pem"

# ---------------------------------------------------------------- measurement
# wrapper overhead (ip netns exec + time + timeout starting /bin/true)
measure_wrapper

# link probe: one unthrottled curl through /fast/ with and without the cap
if [[ $MODE == netns ]] && command -v curl >/dev/null; then
    any_capped=0
    for s in "${SCENARIOS[@]}"; do [[ $(scenario_capped "$s") == 1 ]] && any_capped=1; done
    if ((any_capped)); then
        for cap in 1 0; do
            set_cap "$cap"
            measure 60 "$TMP/probe.log" curl -s -A e2e-harness -o "$OUT/probe" "$BASE_URL/fast/${FILE_OF[$MEDIUM]}"
            clean_out
            if ((R_RC == 0)); then
                meta probe "$cap" "$MEDIUM" "$R_WALL"
                log "link probe ($([[ $cap == 1 ]] && echo "with $LINK_RATE cap" || echo "no cap")): curl /fast/ $((MEDIUM / MIB)) MiB in ${R_WALL}s = $(awk -v s="$MEDIUM" -v w="$R_WALL" 'BEGIN {printf "%.1f", s / 1048576 / w}') MiB/s"
            fi
        done
        set_cap 0
    fi
fi

# ---------------------------------------------------------------- metadata
results_base e2e
CSV="$BASE.csv"
MD="$BASE.md"
EVENTS_DIR="$BASE.events"   # vfetch's --json lines (stdout), one file per run
RESULT_FILES=("$CSV" "$EVENTS_DIR")

meta_common
for t in aria2c axel curl wget; do
    command -v "$t" >/dev/null && meta version "$t" "$(ver "$t" --version)"
done
[[ -n $CA_FILE ]] && meta version openssl "$(ver openssl version)"
if [[ " ${ACTIVE_TOOLS[*]} " == *" vfetch "* ]]; then
    meta_vfetch
fi
meta version bash "$BASH_VERSION"
meta link "$LINK_RATE" "$LINK_BPS" "$TBF_BURST" "$TBF_LATENCY"
meta wrapper_ms "$WRAP_MS"
meta base_url "$BASE_URL"
[[ -n $TLS_PORT ]] && meta tls_url "https://127.0.0.1:$TLS_PORT"
# the commands: over http, and (h2) over https with the certificate as CA file
for t in "${ACTIVE_TOOLS[@]}"; do [[ $t == vfetch-queue ]] || meta command "$t" "$(tool_cmd_display "$t")"; done
if [[ " ${SCENARIOS[*]} " == *" many "* ]]; then
    for t in $(sc_tools many); do
        QUEUE_CACHE=CACHE many_cmd "$t" LIST OUT; CMD[0]=${CMD[0]##*/}
        meta command_many "$t" "$(printf '%q ' "${CMD[@]}")"
    done
fi
if [[ " ${SCENARIOS[*]} " == *" mirrors "* ]]; then
    MIRROR_URL=URL2
    for t in $(scenario_tools mirrors); do
        [[ " ${ACTIVE_TOOLS[*]} " == *" $t "* ]] && meta command_mirrors "$t" "$(tool_cmd_display "$t")"
    done
    MIRROR_URL=""
fi
if [[ -n $CA_FILE ]]; then
    for t in $(scenario_tools h2); do
        [[ " ${ACTIVE_TOOLS[*]} " == *" $t "* ]] && meta command_h2 "$t" "$(tool_cmd_display "$t" CERT)"
    done
fi
meta_wrapper
meta events "$(basename "$EVENTS_DIR")"
for n in "${NOTES[@]}"; do meta note "$n"; done

echo "scenario,size_bytes,location,capped,rep,order,tool,exit_code,status,wall_s,time_wall_s,user_s,sys_s,maxrss_kib,start_ts,end_ts,sha_ok" >"$CSV"

# ---------------------------------------------------------------- runs
FAILED=0
for sc in "${SCENARIOS[@]}"; do
    size=$(scenario_size "$sc"); loc=$(scenario_location "$sc"); capped=$(scenario_capped "$sc")
    tmo=$(scenario_timeout "$sc")
    [[ $MODE == netns ]] || capped=0
    file=${FILE_OF[$size]:-}; sha=${SHA_OF[$size]:-}
    url=$(scenario_url "$sc" "$file")
    MIRROR_URL=""; [[ $sc == mirrors ]] && MIRROR_URL="http://127.0.0.2:$PORT/limited-mirror/$file"
    ca=""; [[ $sc == h2 ]] && ca=$CA_FILE
    mapfile -t SC_TOOLS < <(sc_tools "$sc")
    NT=${#SC_TOOLS[@]}
    set_cap "$capped"
    meta scenario "$sc" "$size" "/$loc/" "$capped" "$tmo"
    # untimed warm-up: one unthrottled download of the same file into the same
    # directory, so that the first timed run does not pay for cold memory alone
    if [[ $sc != many ]] && command -v curl >/dev/null; then
        measure 120 "$TMP/warmup.log" curl -s -A e2e-harness -o "$OUT/dl.bin" "$BASE_URL/fast/$file" || true
        clean_out
    fi
    log ""
    log "== $sc: $((size / MIB)) MiB via ${url%/*}/, link cap: $([[ $capped == 1 ]] && echo "$LINK_RATE" || echo none), $REPS rep(s), limit ${tmo}s per run"
    for ((rep = 1; rep <= REPS; rep++)); do
        for ((k = 0; k < NT; k++)); do
            tool=${SC_TOOLS[$(((k + rep - 1) % NT))]}   # rotate the start tool per rep
            clean_out
            if [[ $sc == many ]]; then
                if [[ $tool == vfetch-queue ]]; then
                    serve_start $((tmo + 30)) "$QUEUE_CACHE" many --max-downloads "$MANY_AT_ONCE" || true
                fi
                many_cmd "$tool" "$TMP/many.list" "$OUT/many"
            else
                tool_cmd "$tool" "$url" "$OUT" dl.bin "$ca"
            fi
            measure "$tmo" "$TMP/tool.log" "${CMD[@]}"
            [[ $tool == vfetch-queue ]] && { serve_stop; rm -rf "$QUEUE_CACHE"; }
            read -r t_wall t_user t_sys t_rss <<<"$R_TIME"
            status=$(status_of "$R_RC")
            sha_ok=0
            if [[ $status == ok && $sc == many ]]; then
                if cmp -s "$TMP/many.sha256" <(cd "$OUT/many" 2>/dev/null && sha256sum -- *.bin | sort -k2); then
                    sha_ok=1
                else
                    status=sha_mismatch
                fi
            elif [[ $status == ok ]]; then
                if [[ ! -f $OUT/dl.bin ]]; then
                    status=no_output
                elif [[ $(sha256sum "$OUT/dl.bin" | awk '{print $1}') == "$sha" ]]; then
                    sha_ok=1
                else
                    status=sha_mismatch
                fi
            fi
            clean_out
            if [[ $tool == vfetch* ]]; then  # its JSON event lines (stdout; stderr lines start with "vfetch:")
                mkdir -p "$EVENTS_DIR"
                grep '^{' "$TMP/tool.log" >"$EVENTS_DIR/$sc-$tool-rep$rep.jsonl" || true
            fi
            echo "$sc,$size,/$loc/,$capped,$rep,$k,$tool,$R_RC,$status,$R_WALL,$t_wall,$t_user,$t_sys,$t_rss,$R_T0,$R_T1,$sha_ok" >>"$CSV"
            printf '   rep %d/%d  %-11s %8.2f s %8.1f MiB/s  cpu %6.2f s  rss %6.1f MiB  %s\n' \
                "$rep" "$REPS" "$tool" "$R_WALL" "$(awk -v s="$size" -v w="$R_WALL" 'BEGIN {print s / 1048576 / w}')" \
                "$(awk -v u="$t_user" -v s="$t_sys" 'BEGIN {print u + s}')" "$(awk -v r="$t_rss" 'BEGIN {print r / 1024}')" \
                "$status" >&2
            if [[ $status != ok ]]; then
                FAILED=$((FAILED + 1))
                { grep -v '^{' "$TMP/tool.log" || true; } | sed -n '1,5s/^/      | /p' >&2  # (grep fails on an empty log)
            fi
        done
    done
    [[ $capped == 1 ]] && meta tc_stats "$sc" "$(tc_stats)"
done
set_cap 0

# ---------------------------------------------------------------- report
ACCESS_COPY="$BASE.access.log"
save_access_log "$ACCESS_COPY"
if [[ -d $EVENTS_DIR ]]; then
    # before the report, which links the PNGs it finds next to itself
    python3 "$PLOTS_PY" e2e --csv "$CSV" --events-dir "$EVENTS_DIR" --out-prefix "${MD%.md}" >&2 \
        || log "NOTE: no throughput plots (plots.py failed or matplotlib is missing: scripts/install-deps.sh bench)"
fi
python3 "$REPORT_PY" --csv "$CSV" --meta "$META" --access-log "$ACCESS_COPY" --md "$MD"
log ""
log "results: ${MD#"$REPO_ROOT"/}  (raw runs: ${CSV#"$REPO_ROOT"/}, nginx log: ${ACCESS_COPY#"$REPO_ROOT"/}$([[ -d $EVENTS_DIR ]] && echo ", vfetch events: ${EVENTS_DIR#"$REPO_ROOT"/}/"))"
((FAILED == 0)) || log "NOTE: $FAILED run(s) did not finish OK (see the status column)"
