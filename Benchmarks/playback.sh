#!/usr/bin/env bash
# Playback benchmark: what a viewer feels (time to first frame, seeks, stalls)
# when a player reads the origin directly, through `vfetch serve`, or through
# mpv's own cache.
#
# Two clips of one encode (40 s, ~16 Mbit/s H.264+AAC, 2 s GOPs, made once
# with ffmpeg and cached under Benchmarks/results/.cache/): `moovend` (moov
# after mdat) and `faststart` (the same streams remuxed with +faststart).  A
# local nginx (Debian's package in its default configuration, nginx.conf.in)
# serves them at 1 MiB/s (/play/, limit_rate 1m) and 100 KiB/s (/play100k/,
# limit_rate 100k) per connection.  A cell is a clip at a rate.  As root
# nginx, the servers and the players run in a throw-away network namespace
# (no link cap); otherwise on the host loopback.
#
# Modes:  local   the player reads the clip from local disk: what no
#                 server can beat, the player's own time
#         direct  the player reads the origin
#         serve   the player reads a fresh `vfetch serve` (empty cache dir)
#                 per measurement: http://127.0.0.1:PORT/media?url=<origin>
#         cache   mpv's own cache (--cache=yes) on the origin
#         serve-base  as serve, with the vfetch in $VFETCH_BASE (when set; it
#                 must answer /media): two builds side by side, interleaved
# With --rtt MS the origin is MS ms of round trip away (delay_proxy.py relays
# every connection, holding each chunk half of it each way and a connection's
# first bytes one round trip more, as TCP's handshake does); serve and the
# players stay next to each other, as on a viewer's machine.
# Players, and why:
#   ffmpeg (direct, serve): the issue's figures.  TTFF = wall time of
#     `ffmpeg -i URL -frames:v 1 -f null -` from a cold start; seek = wall
#     time of `ffmpeg -ss P -i URL -frames:v 1 -f null -`, a cold process per
#     point.  Direct, that includes reading head and moov; through serve the
#     server runs with `--prefetch none` and an untimed `ffprobe URL` reads
#     head and moov first, so each point is one the cache does not have yet.
#   mpv 0.35 (all three): a real player at real speed, `--vo=null --ao=null`,
#     direct with --cache=no.  Times come from mpv's log, whose clock starts
#     with mpv (playback_mpv.lua marks, playback_mpv.py reads):
#     TTFF = mpv's "first video frame after restart shown"; seek = from the
#     seek command (absolute+exact), issued as soon as the previous frame is
#     shown, to that line after it (a warm player seeking away from what it
#     has).  Either player gives up on a seek after 12 s (at 100 KiB/s a
#     single connection needs longer): such a seek counts as 12 s, a lower
#     bound, and the report marks it.  Stalls = paused-for-cache after the
#     first frame: count and time, over playing the clip, stopped at a cap (--play-cap; default 90 s at
#     1 MiB/s, 25 s at 100 KiB/s, where a single connection cannot finish:
#     the direct and cache figures there are then lower bounds, marked so).
#     Stalls are mpv's only: `ffmpeg -re` catches up after a stall, so its
#     wall time gives no count of stalls.
# Five seek points drawn with a fixed seed (at least 4 s apart), the same
# for every mode, cell and rep.  Per rep the cells run in turn and within a
# cell the modes rotate (rep 1: direct serve cache, rep 2: serve cache
# direct, ...), so a busy machine slows each alike; /proc/loadavg goes with
# every row.  Once per run the decoded video frames (ffmpeg framemd5) through
# the server are compared with the local file's, for both clips; a mismatch
# fails the run (the unthrottled origin is checked too: the check of the
# check).
#
# Usage: Benchmarks/playback.sh [options]
#   --quick              1 rep (default 5)
#   --reps N             repetitions (default 5, quick 1)
#   --cells LIST         comma-separated cells (default
#                        moovend-1m,moovend-100k,faststart-1m,faststart-100k)
#   --play-cap S         stop each play run after S s (default 90 or 25, above)
#   --no-serve           without the serve mode
#   --no-mpv             ffmpeg only (no cache mode, no stalls)
#   --serve-args ARGS    extra arguments appended to `vfetch serve`
#   --rtt MS             the origin's round trip (default 0: loopback's)
#   --no-netns           force the host loopback
#   -h, --help           this text
#
# vfetch is taken from $VFETCH, else <repo>/.build/release/vfetch; when it is
# missing or has no `serve` command, the serve mode is reported as not
# available.  Results: Benchmarks/results/playback-<date>.md, .csv (one row
# per measurement), .runs.csv (each process's start and end, to read the
# access log by), .summary.csv, .timeline.csv (mpv's media time against wall
# time), -timeline.png (with matplotlib), .access.log (nginx) and .serve.log
# (the servers' output).  Needs: bash >= 5, nginx >= 1.17, ffmpeg + ffprobe,
# mpv, python3, curl, coreutils; iproute2 (ip) for the namespace.
set -euo pipefail
export LC_ALL=C

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPORT_PY="$SCRIPT_DIR/playback_report.py"
MPV_PY="$SCRIPT_DIR/playback_mpv.py"
MPV_LUA="$SCRIPT_DIR/playback_mpv.lua"
DEFAULT_REPS=5

# ---------------------------------------------------------------- constants
readonly CLIP_SECONDS=40
# The encode: testsrc2 1280x720@30 and a sine tone; CBR 16 Mbit/s video (x264
# filler NALs keep the rate up on this easy picture), 2 s GOPs, 128 kbit/s
# AAC; moov written last.  The faststart clip is this file remuxed.
readonly CLIP_ARGS=(-f lavfi -i "testsrc2=size=1280x720:rate=30" -f lavfi -i "sine=frequency=440:sample_rate=48000"
    -t "$CLIP_SECONDS" -map 0:v -map 1:a
    -c:v libx264 -preset veryfast -pix_fmt yuv420p -g 60 -keyint_min 60 -sc_threshold 0
    -b:v 16M -minrate 16M -maxrate 16M -bufsize 8M -x264-params nal-hrd=cbr
    -c:a aac -b:a 128k -movflags -faststart)
readonly FASTSTART_ARGS=(-map 0 -c copy -movflags +faststart)
readonly ALL_CELLS="moovend-1m,moovend-100k,faststart-1m,faststart-100k"
declare -rA RATE_PATH=([1m]=/play/ [100k]=/play100k/)   # nginx.conf.in's locations
declare -rA RATE_NAME=([1m]="1 MiB/s" [100k]="100 KiB/s")
declare -rA RATE_CAP=([1m]=90 [100k]=25)                 # default --play-cap per rate
readonly SEEK_CAP=12                # give up on one seek after this long (s): a lower bound then
readonly SEEK_SEED=17 SEEK_COUNT=5
readonly T_SHORT=60                 # limit for an ffmpeg TTFF, seek or ffprobe run (s)
readonly T_SEEKS=$((20 + (SEEK_COUNT + 1) * SEEK_CAP))   # limit for an mpv seek run (s)
readonly T_DECODE=$((CLIP_SECONDS * 5))   # limit for a framemd5 pass (s)

# ---------------------------------------------------------------- options
WANT_SERVE=1
WANT_MPV=1
SERVE_ARGS=""
CELLS=$ALL_CELLS
PLAY_CAP=""
RTT_MS=0
while (($#)); do
    common_option "$@"   # --quick, --reps, --no-netns, --help
    if ((NARGS)); then shift "$NARGS"; continue; fi
    case "$1" in
        --no-serve) WANT_SERVE=0 ;;
        --no-mpv) WANT_MPV=0 ;;
        --serve-args) SERVE_ARGS=${2?--serve-args needs a value}; shift ;;
        --serve-args=*) SERVE_ARGS=${1#*=} ;;
        --cells) CELLS=${2?--cells needs a value}; shift ;;
        --cells=*) CELLS=${1#*=} ;;
        --play-cap) PLAY_CAP=${2?--play-cap needs a value}; shift ;;
        --play-cap=*) PLAY_CAP=${1#*=} ;;
        --rtt) RTT_MS=${2?--rtt needs a value}; shift ;;
        --rtt=*) RTT_MS=${1#*=} ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done
check_common_options
IFS=, read -r -a CELL_LIST <<<"$CELLS"
for cell in "${CELL_LIST[@]}"; do
    [[ ,$ALL_CELLS, == *",$cell,"* ]] || die "unknown cell '$cell' (cells: $ALL_CELLS)"
done
[[ -z $PLAY_CAP || $PLAY_CAP =~ ^[0-9]+$ ]] || die "--play-cap must be whole seconds"
[[ $RTT_MS =~ ^[0-9]+$ ]] && ((RTT_MS <= 1000)) || die "--rtt must be whole milliseconds, 0-1000"
clip_of() { echo "${1%-*}"; }
rate_of() { echo "${1##*-}"; }
cap_of() { echo "${PLAY_CAP:-${RATE_CAP[$(rate_of "$1")]}}"; }

find_nginx
need_commands ffmpeg ffprobe python3 curl timeout
if ((WANT_MPV)) && ! command -v mpv >/dev/null; then
    die "mpv not found (scripts/install-deps.sh bench, or apt-get install mpv; --no-mpv to go without)"
fi

NOTES=()
SERVE=0
SERVE_WHY=""
PREFETCH_NONE=()
if ((!WANT_SERVE)); then
    SERVE_WHY="--no-serve"
elif [[ ! -x $VFETCH_BIN ]]; then
    SERVE_WHY="vfetch binary not found (${VFETCH_BIN#"$REPO_ROOT"/})"
else
    # An unknown subcommand with --help prints the top-level help and exits 0,
    # so look for the subcommand's own usage line.
    serve_help=$(timeout 10 "$VFETCH_BIN" serve --help 2>&1) && [[ $serve_help == *"vfetch serve"* ]] && SERVE=1 \
        || SERVE_WHY="\`vfetch serve --help\` fails: this vfetch has no serve command"
    if ((SERVE)); then
        if [[ $serve_help == *--prefetch* ]]; then
            PREFETCH_NONE=(--prefetch none)
        else
            NOTES+=("vfetch serve has no --prefetch option: the ffmpeg seek runs use its default prefetching")
        fi
    fi
fi
if ((!SERVE)); then
    log "NOTE: serve mode not available: $SERVE_WHY"
    NOTES+=("serve mode not available: $SERVE_WHY")
fi
MODES=(local direct)
((SERVE)) && MODES+=(serve)
if ((SERVE)) && [[ -n $VFETCH_BASE ]]; then
    [[ -x $VFETCH_BASE ]] || die "VFETCH_BASE is not an executable: $VFETCH_BASE"
    MODES+=(serve-base)
fi
((WANT_MPV)) && MODES+=(cache)

# ---------------------------------------------------------------- temp space
make_tmp vfplay $((600 * 1048576))   # two clips + one cache (~80 MB each) + slack

# ---------------------------------------------------------------- the clips (cached)
mkdir -p "$CACHE_DIR"
CLIP_KEY=$(printf '%s\n' "${CLIP_ARGS[@]}" "$(ffmpeg -version 2>/dev/null | head -n 1)" | sha256sum | cut -c1-12)
CLIP="$CACHE_DIR/playback-clip-$CLIP_KEY.mp4"
FAST_CLIP="$CACHE_DIR/playback-clip-$CLIP_KEY-faststart.mp4"
clip_ok() {  # path: the cached clip is whole, 40 s long
    [[ -s $1 ]] || return 1
    local d; d=$(timeout 30 ffprobe -v error -show_entries format=duration -of csv=p=0 "$1" 2>/dev/null) || return 1
    awk -v d="$d" -v want="$CLIP_SECONDS" 'BEGIN {exit !(d + 0 > want - 0.5 && d + 0 < want + 0.5)}'
}
make_clip() {  # path ffmpeg-args...: made once, kept in the cache
    local out=$1; shift
    if clip_ok "$out"; then log "clip: ${out#"$REPO_ROOT"/} (cached)"; return; fi
    log "clip: making ${out#"$REPO_ROOT"/} ..."
    timeout -k 5 900 ffmpeg -hide_banner -nostdin -loglevel error -y "$@" -f mp4 "$out.tmp" </dev/null \
        || { rm -f -- "$out.tmp"; die "ffmpeg could not make $out"; }
    mv -f -- "$out.tmp" "$out"
    clip_ok "$out" || die "the new clip $out does not probe as ${CLIP_SECONDS} s"
}
make_clip "$CLIP" "${CLIP_ARGS[@]}"
make_clip "$FAST_CLIP" -i "$CLIP" "${FASTSTART_ARGS[@]}"
top_boxes() {  # path -> "moov_offset box box ...": the top-level boxes up to moov
    python3 - "$1" <<'EOF'
import struct, sys
f = open(sys.argv[1], "rb"); n = f.seek(0, 2); off = 0; order = []
while off + 8 <= n:
    f.seek(off); h = f.read(16); size, kind = struct.unpack(">I4s", h[:8])
    if size == 1: size = struct.unpack(">Q", h[8:16])[0]
    if size < 8: break
    order.append(kind.decode("latin-1"))
    if kind == b"moov": print(off, " ".join(order)); break
    off += size
EOF
}
declare -A CLIP_BYTES MOOV_AT BOXES
for name in moovend faststart; do
    src=$CLIP; [[ $name == faststart ]] && src=$FAST_CLIP
    cp -- "$src" "$WWW/$name.mp4"
    chmod 0644 "$WWW/$name.mp4"
    CLIP_BYTES[$name]=$(stat -c %s "$src")
    read -r MOOV_AT[$name] BOXES[$name] < <(top_boxes "$src") || die "no moov box in $src"
    log "  $name: $((CLIP_BYTES[$name] / 1048576)) MiB, boxes: ${BOXES[$name]} (moov at byte ${MOOV_AT[$name]})"
done
((MOOV_AT[moovend] > CLIP_BYTES[moovend] / 2)) || die "the moovend clip's moov is not at the end"
((MOOV_AT[faststart] < 1048576)) || die "the faststart clip's moov is not at the start"

# The seek points: SEEK_COUNT media seconds in [2, CLIP_SECONDS - 2], at least 4 s apart, in the
# order drawn.
read -r -a SEEK_POINTS < <(python3 - "$SEEK_SEED" "$SEEK_COUNT" "$CLIP_SECONDS" <<'EOF'
import random, sys
rnd, n, dur = random.Random(int(sys.argv[1])), int(sys.argv[2]), float(sys.argv[3])
pts = []
while len(pts) < n:
    p = round(rnd.uniform(2, dur - 2), 1)
    if all(abs(p - q) >= 4 for q in pts): pts.append(p)
print(" ".join(f"{p:g}" for p in pts))
EOF
)

# ---------------------------------------------------------------- network namespace
setup_netns vfplay ip
note_loopback
PORT=$(free_port 18080)
ORIGIN="http://127.0.0.1:$PORT"
origin_url() { echo "$ORIGIN${RATE_PATH[$(rate_of "$1")]}$(clip_of "$1").mp4"; }   # cell -> URL
local_path() { echo "$WWW/$(clip_of "$1").mp4"; }   # cell -> the clip nginx serves, for the local mode

# ---------------------------------------------------------------- nginx
start_nginx "$PORT"
if ((RTT_MS)); then
    RELAY_PORT=$(free_port 18079)
    inns python3 "$SCRIPT_DIR/delay_proxy.py" "$RELAY_PORT" "$PORT" "$RTT_MS" 2>>"$RUN/relay.log" &
    HELPER_PIDS+=($!)
    for ((i = 0; i < 50; i++)); do inns bash -c "exec 3<>/dev/tcp/127.0.0.1/$RELAY_PORT" 2>/dev/null && break; sleep 0.1; done
    ORIGIN="http://127.0.0.1:$RELAY_PORT"
    log "origin: $RTT_MS ms of round trip away (delay_proxy.py on port $RELAY_PORT)"
fi
for cell in "${CELL_LIST[@]}"; do
    got=$(inns curl -sf -r 0-7 -o /dev/null -w '%{http_code} %{content_type}' "$(origin_url "$cell")") \
        || die "nginx does not serve $(origin_url "$cell")"
    [[ $got == "206 video/mp4" ]] || die "nginx answered a range request for $cell with '$got', not '206 video/mp4'"
done

# ---------------------------------------------------------------- measurement
MEASURE_CPU=0   # (lib.sh's measure) the players' times are wall times

start_server() {  # mode life_s label [serve args...]: lib.sh's serve_start on a fresh, empty cache dir
    local VFETCH_BIN=$VFETCH_BIN   # serve_start's binary: the base build's for serve-base
    [[ $1 == serve-base ]] && VFETCH_BIN=$VFETCH_BASE
    rm -rf -- "$TMP/cache"
    serve_start "$2" "$TMP/cache" "${@:3}"
}

# One process's record in .runs.csv, and a row per measurement in .csv:
# cell,mode,player,rep,measure,point,status,value,load1
RUN_N=0
next_log() { RUN_N=$((RUN_N + 1)); LAST_LOG="$TMP/run-$RUN_N.log"; }
run_record() {  # cell mode player rep what (after measure)
    echo "$RUN_N,$1,$2,$3,$4,$5,$R_RC,$R_T0,$R_T1" >>"$RUNS"
}
row() {  # cell mode player rep measure point status value
    local IFS=,
    echo "$*,$LOAD1" >>"$CSV"
    [[ $7 == ok || $7 == capped ]] || FAILED=$((FAILED + 1))
}
show_since() {  # csv_line: the rows after that line, short, for the console
    awk -F, -v from="$1" 'NR > from && $5 != "probe" {
            s = s sprintf("%s%s=%s%s ", $5, ($6 != "" ? "@" $6 : ""), $8, ($7 == "ok" ? "" : "(" $7 ")"))
        } END {print s}' "$CSV" | fold -s -w 150 | sed 's/^/      /' >&2
}
show_failure() { sed -n '1,5s/^/      | /p' "$LAST_LOG" >&2; }

readonly FF=(ffmpeg -hide_banner -nostdin -loglevel warning)
ffmpeg_run() {  # cell mode rep measure point url: one timed cold ffmpeg, one row
    local cell=$1 mode=$2 rep=$3 what=$4 point=$5 url=$6 ss=() tmo=$T_SHORT
    [[ -n $point ]] && { ss=(-ss "$point"); tmo=$SEEK_CAP; }
    next_log
    measure "$tmo" "$LAST_LOG" "${FF[@]}" "${ss[@]}" -i "$url" -frames:v 1 -f null -
    run_record "$cell" "$mode" ffmpeg "$rep" "$what"
    local status; status=$(status_of "$R_RC")
    # a seek stopped at the cap took at least that long
    [[ -n $point && $status == timeout ]] && status=capped
    row "$cell" "$mode" ffmpeg "$rep" "$what" "$point" "$status" "$R_WALL"
    [[ $status == ok || $status == capped ]] || show_failure
}
ffmpeg_mode() {  # cell mode rep: TTFF and the seeks, cold processes
    local cell=$1 mode=$2 rep=$3 url p mark
    url=$(origin_url "$cell")
    mark=$(wc -l <"$CSV")
    log "   $cell $mode: ffmpeg ttff, seeks"
    if [[ $mode == local ]]; then
        url=$(local_path "$cell")
        ffmpeg_run "$cell" local "$rep" ttff "" "$url"
    elif [[ $mode == serve* ]]; then
        start_server "$mode" "$T_SHORT" "$cell ffmpeg ttff rep $rep" || { server_failed "$cell" ffmpeg "$rep" ttff "$mode"; return; }
        ffmpeg_run "$cell" "$mode" "$rep" ttff "" "$(serve_url "$url")"
        serve_stop
        start_server "$mode" $((T_SHORT * 3)) "$cell ffmpeg seek rep $rep" "${PREFETCH_NONE[@]}" \
            || { server_failed "$cell" ffmpeg "$rep" seek "$mode"; return; }
        url=$(serve_url "$url")
        # untimed: head and moov into the cache
        next_log
        measure "$T_SHORT" "$LAST_LOG" ffprobe -v error -show_entries format=duration -of csv=p=0 "$url"
        run_record "$cell" "$mode" ffmpeg "$rep" probe
        row "$cell" "$mode" ffmpeg "$rep" probe "" "$(status_of "$R_RC")" "$R_WALL"
    else
        ffmpeg_run "$cell" direct "$rep" ttff "" "$url"
    fi
    for p in "${SEEK_POINTS[@]}"; do ffmpeg_run "$cell" "$mode" "$rep" seek "$p" "$url"; done
    serve_stop
    show_since "$mark"
}

readonly MPV=(mpv --no-config --vo=null --ao=null --really-quiet --ytdl=no --osc=no --load-stats-overlay=no
    --load-osd-console=no --load-auto-profiles=no --input-default-bindings=no)
mpv_run() {  # cell mode rep what(play|seek): one mpv session (a fresh server for serve)
    local cell=$1 mode=$2 rep=$3 what=$4 url cache=no cap tmo opts mark bad
    mark=$(wc -l <"$CSV")
    log "   $cell $mode: mpv $what"
    url=$(origin_url "$cell")
    [[ $mode == local ]] && url=$(local_path "$cell")
    cap=$(cap_of "$cell")
    if [[ $what == play ]]; then
        opts="pb-mode=play,pb-cap=$cap"; tmo=$((cap + 15))
    else
        opts="pb-mode=seek,pb-cap=$((T_SEEKS - 15)),pb-seek-cap=$SEEK_CAP,pb-seeks=$(IFS=:; echo "${SEEK_POINTS[*]}")"
        tmo=$T_SEEKS
    fi
    case $mode in
        serve*) start_server "$mode" $((tmo + 10)) "$cell mpv $what rep $rep" || { server_failed "$cell" mpv "$rep" "$what" "$mode"; return; }
               url=$(serve_url "$url") ;;
        cache) cache=yes ;;
    esac
    next_log
    local mlog="$TMP/mpv-$RUN_N.log"
    measure "$tmo" "$LAST_LOG" "${MPV[@]}" --cache="$cache" --log-file="$mlog" --script="$MPV_LUA" \
        --script-opts="$opts" "$url"
    run_record "$cell" "$mode" mpv "$rep" "$what"
    serve_stop
    python3 "$MPV_PY" "$mlog" --what "$what" --row "$cell,$mode,mpv,$rep" --load1 "$LOAD1" --seek-cap "$SEEK_CAP" \
        --timeline "$TIMELINE" >>"$CSV"
    ((R_RC == 0)) || { FAILED=$((FAILED + 1)); show_failure; }
    bad=$(awk -F, -v from="$mark" 'NR > from && $7 != "ok" && $7 != "capped"' "$CSV" | wc -l)
    if ((bad)); then
        FAILED=$((FAILED + bad))
        { grep "\]\[e\]\|pb end" "$mlog" || true; } | sed -n '1,3s/^/      | /p' >&2
    fi
    show_since "$mark"
}
server_failed() {  # cell player rep what [mode]
    row "$1" "${5:-serve}" "$2" "$3" "$4" "" server_failed nan
}

# framemd5 of the video frames (comments stripped) -> file; sets R_RC
framemd5() {  # url_or_path outfile
    next_log
    measure "$T_DECODE" "$TMP/md5-$RUN_N.out" ffmpeg -hide_banner -nostdin -loglevel error -i "$1" -map 0:v -f framemd5 -
    grep -v '^#' "$TMP/md5-$RUN_N.out" >"$2" || true
    cp -- "$TMP/md5-$RUN_N.out" "$LAST_LOG"
}
FRAMES=""
frames_check() {  # label url reference: sets FRAMES to yes, NO or failed (not in $(...): the run must stay killable)
    local out="$TMP/frames-$1.md5" ref=$3
    framemd5 "$2" "$out"
    if ((R_RC != 0)); then
        log "   frames via $1: ffmpeg failed ($(status_of "$R_RC")):"
        { grep -v '^[0-9]' "$LAST_LOG" || true; } | sed -n '1,5s/^/      | /p' >&2
        FRAMES=failed
    elif cmp -s "$out" "$ref"; then
        log "   frames via $1: $(wc -l <"$out") frames, identical to the local file's"
        FRAMES=yes
    else
        log "   frames via $1: $(wc -l <"$out") frames, NOT identical to the local file's ($(wc -l <"$ref") frames)"
        diff "$ref" "$out" | sed -n '1,6s/^/      | /p' >&2
        FRAMES=NO
    fi
}

# wrapper overhead (ip netns exec + timeout starting /bin/true)
measure_wrapper

# ---------------------------------------------------------------- metadata
results_base playback
CSV="$BASE.csv"
RUNS="$BASE.runs.csv"
TIMELINE="$BASE.timeline.csv"
SUMMARY="$BASE.summary.csv"
MD="$BASE.md"
PNG="$BASE-timeline.png"
SERVE_LOGS="$BASE.serve.log"
RESULT_FILES=("$CSV" "$RUNS" "$TIMELINE" "$SERVE_LOGS")

meta_common
meta version ffmpeg "$(ver ffmpeg -version)"
((WANT_MPV)) && meta version mpv "$(ver mpv --version)"
[[ -x $VFETCH_BIN ]] && meta_vfetch
meta clip_seconds "$CLIP_SECONDS"
meta clip_cmd "ffmpeg $(printf '%q ' "${CLIP_ARGS[@]}")moovend.mp4; ffmpeg -i moovend.mp4 ${FASTSTART_ARGS[*]} faststart.mp4"
for name in moovend faststart; do meta clip "$name" "${CLIP_BYTES[$name]}" "${BOXES[$name]}" "${MOOV_AT[$name]}"; done
for cell in "${CELL_LIST[@]}"; do
    meta cell "$cell" "$(clip_of "$cell")" "${RATE_NAME[$(rate_of "$cell")]}" "$(origin_url "$cell")" "$(cap_of "$cell")"
done
meta modes "${MODES[@]}"
meta seek_points "${SEEK_POINTS[*]}" "$SEEK_SEED" "$SEEK_CAP"
meta rtt_ms "$RTT_MS"
meta wrapper_ms "$WRAP_MS"
meta nice "$(nice)"
meta serve "$SERVE" "$SERVE_WHY"
((SERVE)) && meta serve_cmd "vfetch serve --port PORT --cache-dir EMPTY_DIR $SERVE_ARGS" "${PREFETCH_NONE[*]}"
meta cmd "ffmpeg ttff" "$(printf '%q ' "${FF[@]}")-i URL -frames:v 1 -f null -"
meta cmd "ffmpeg seek" "$(printf '%q ' "${FF[@]}")-ss POINT -i URL -frames:v 1 -f null -"
meta cmd "ffmpeg probe" "ffprobe -v error -show_entries format=duration -of csv=p=0 URL   (serve, before the seeks)"
meta cmd "mpv" "$(printf '%q ' "${MPV[@]}")--cache=no|yes --log-file=LOG --script=playback_mpv.lua --script-opts=pb-mode=play|seek,... URL"
meta cmd frames "ffmpeg -i URL -map 0:v -f framemd5 -"
meta cmd info "vfetch info URL --json   (URL: the moovend clip at 1 MiB/s)"
meta_wrapper

echo "cell,mode,player,rep,measure,point,status,value,load1" >"$CSV"
echo "run,cell,mode,player,rep,what,exit_code,start_ts,end_ts" >"$RUNS"
echo "cell,mode,rep,wall_s,media_s" >"$TIMELINE"

# ---------------------------------------------------------------- runs
FAILED=0
log ""
log "== playback: cells $CELLS; modes ${MODES[*]}; seeks to ${SEEK_POINTS[*]} s; $REPS rep(s) ($MODE)"
for ((rep = 1; rep <= REPS; rep++)); do
    log "-- rep $rep/$REPS, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    meta load "$rep" "$(cut -d' ' -f1-3 /proc/loadavg)"
    # the modes rotate: rep 1 direct first, rep 2 the second mode first, ...
    order=()
    for ((i = 0; i < ${#MODES[@]}; i++)); do order+=("${MODES[(i + rep - 1) % ${#MODES[@]}]}"); done
    for cell in "${CELL_LIST[@]}"; do
        for mode in "${order[@]}"; do
            LOAD1=$(load1)
            [[ $mode != cache ]] && ffmpeg_mode "$cell" "$mode" "$rep"
            if ((WANT_MPV)); then
                mpv_run "$cell" "$mode" "$rep" seek
                # from local disk nothing stalls: no play run
                [[ $mode != local ]] && mpv_run "$cell" "$mode" "$rep" play
            fi
        done
    done
done

# `vfetch info URL`: what it costs to learn what the moovend clip is. Counted from
# nginx's log (the lines this run added); the target is <= 3 requests and <= moov + 512 KiB.
if [[ -x $VFETCH_BIN ]]; then
    lines=$(log_lines)
    next_log
    measure "$T_SHORT" "$LAST_LOG" "$VFETCH_BIN" info "$(origin_url moovend-1m)" --json
    sleep 0.5   # nginx logs a response when it has ended
    read -r info_requests info_bytes < <(awk -v from="$lines" 'NR > from && $8 == "/play/moovend.mp4" {n++; s += $5} END {printf "%d %d\n", n, s}' "$ACCESS")
    info_duration=$(python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["duration"])' <"$LAST_LOG" 2>/dev/null || echo nan)
    moov_bytes=$((CLIP_BYTES[moovend] - MOOV_AT[moovend]))
    meta info "$R_RC" "$R_WALL" "$info_requests" "$info_bytes" "$moov_bytes" "$info_duration"
    log "   vfetch info URL: exit $R_RC, ${R_WALL}s, $info_requests requests, $info_bytes bytes (moov $moov_bytes bytes), duration $info_duration s"
fi

# the decoded frames: the origin (unthrottled) and the server against the local files
FRAMES_BAD=0
for name in moovend faststart; do
    framemd5 "$WWW/$name.mp4" "$TMP/frames-local-$name.md5"
    ((R_RC == 0)) && [[ -s $TMP/frames-local-$name.md5 ]] || die "ffmpeg could not decode the local $name clip"
    if [[ $name == moovend ]]; then
        frames_check "origin-$name" "$ORIGIN/fast/$name.mp4" "$TMP/frames-local-$name.md5"
        meta frames direct "$name" "$FRAMES" "origin without rate limit"
        [[ $FRAMES == yes ]] || FRAMES_BAD=1
    fi
    if ((SERVE)); then
        FRAMES=failed
        if start_server serve "$T_DECODE" "frames $name"; then
            frames_check "serve-$name" "$(serve_url "$ORIGIN/play/$name.mp4")" "$TMP/frames-local-$name.md5"
            serve_stop
        fi
        meta frames serve "$name" "$FRAMES" "through vfetch serve (cold cache, 1 MiB/s)"
        [[ $FRAMES == yes ]] || FRAMES_BAD=1
    fi
done

# ---------------------------------------------------------------- report
save_access_log "$BASE.access.log"
if ((WANT_MPV)); then
    if python3 "$PLOTS_PY" playback --timeline "$TIMELINE" --duration "$CLIP_SECONDS" --out "$PNG" >&2; then
        meta plot "$(basename "$PNG")"
    else
        log "NOTE: no timeline plot (plots.py failed or matplotlib is missing: scripts/install-deps.sh bench)"
    fi
fi
python3 "$REPORT_PY" --csv "$CSV" --meta "$META" --summary "$SUMMARY" --md "$MD"
log ""
log "results: ${MD#"$REPO_ROOT"/}  (rows: ${CSV#"$REPO_ROOT"/}, summary: ${SUMMARY#"$REPO_ROOT"/}, timeline: ${TIMELINE#"$REPO_ROOT"/})"
((FAILED == 0)) || log "NOTE: $FAILED measurement(s) did not finish OK (see the status column)"
if ((FRAMES_BAD)); then
    log ""
    log "playback.sh: FAILED: decoded frames not identical to the local file's (see above)"
    exit 1
fi
