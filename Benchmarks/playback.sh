#!/usr/bin/env bash
# Playback benchmark: a player (ffmpeg) straight from the origin against the
# same player through `vfetch serve`.
#
# A 40 s, ~16 Mbit/s H.264+AAC MP4 with its `moov` at the END (made once with
# ffmpeg, cached under Benchmarks/results/.cache/) is served by a local nginx
# (Debian's package in its default configuration, nginx.conf.in) at 1 MiB/s
# per connection (`limit_rate 1m`, keep-alive, byte ranges).  One connection
# cannot keep up with the clip's bit rate, so a direct player stalls.  As
# root nginx, the server and the players run in a throw-away network
# namespace (no link cap); otherwise on the host loopback.
#
# Per rep, the two modes alternate (rep 1: direct first, rep 2: serve first, ...):
#   full decode  ffmpeg -re -i URL -f null -      wall time; stall = wall - 40 s
#                (-progress samples give the media-time-vs-wall-time timeline)
#   TTFF         ffmpeg -i URL -frames:v 1 -f null -       from a cold start
#   seek         ffmpeg -ss 30 -i URL -frames:v 1 -f null -
# Direct: URL is the origin.  Serve: every measurement gets a fresh
# `vfetch serve` with an empty cache dir; URL is
# http://127.0.0.1:PORT/stream?url=<origin URL, percent-encoded>; for the seek
# the server runs with `--prefetch none` and `ffprobe URL` (head + moov) runs
# untimed first.  Once per run, the decoded video frames (ffmpeg framemd5)
# through the server are compared with those of the local file; a mismatch
# fails the run.  The same check of the origin (unthrottled) validates the check.
#
# Usage: Benchmarks/playback.sh [options]
#   --quick              1 rep (default 3)
#   --reps N             repetitions per mode (default 3, quick 1)
#   --no-serve           the direct mode only
#   --serve-args ARGS    extra arguments appended to `vfetch serve`
#   --no-netns           force the host loopback
#   -h, --help           this text
#
# vfetch is taken from $VFETCH, else <repo>/.build/release/vfetch; when it is
# missing or has no `serve` command, the serve mode is reported as not available.
# Results: Benchmarks/results/playback-<date>.md, .csv (raw runs), .summary.csv,
# .timeline.csv (wall s vs media s of the -re runs), -timeline.png (with
# matplotlib), .access.log (nginx) and .serve.log (the servers' output).  Needs: bash >= 5, nginx >= 1.17, ffmpeg + ffprobe, python3,
# curl, coreutils; iproute2 (ip) for the namespace.
set -euo pipefail
export LC_ALL=C

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CACHE_DIR="$RESULTS_DIR/.cache"
REPORT_PY="$SCRIPT_DIR/playback_report.py"

# ---------------------------------------------------------------- constants
readonly CLIP_SECONDS=40
readonly SEEK_TO=30
# The clip: testsrc2 1280x720@30 and a sine tone; CBR 16 Mbit/s video (x264
# filler NALs keep the rate up on this easy picture), 2 s GOPs (a key frame
# at every even second, so also at the seek target), 128 kbit/s AAC; no
# +faststart, so the moov box is written last.
readonly CLIP_ARGS=(-f lavfi -i "testsrc2=size=1280x720:rate=30" -f lavfi -i "sine=frequency=440:sample_rate=48000"
    -t "$CLIP_SECONDS" -map 0:v -map 1:a
    -c:v libx264 -preset veryfast -pix_fmt yuv420p -g 60 -keyint_min 60 -sc_threshold 0
    -b:v 16M -minrate 16M -maxrate 16M -bufsize 8M -x264-params nal-hrd=cbr
    -c:a aac -b:a 128k -movflags -faststart)
readonly ORIGIN_RATE="1 MiB/s"      # limit_rate 1m in /play/ (nginx.conf.in)
readonly T_SHORT=60                 # limit for a TTFF, seek or ffprobe run (s)
readonly T_PLAY=$((CLIP_SECONDS * 5))   # limit for a -re run and a framemd5 pass (s)
readonly T_SERVE=$((T_PLAY + 60))   # limit for one server's whole life (s)
readonly SERVE_READY_S=10           # wait for /status at most this long

# ---------------------------------------------------------------- options
WANT_SERVE=1
SERVE_ARGS=""
while (($#)); do
    common_option "$@"   # --quick, --reps, --no-netns, --help
    if ((NARGS)); then shift "$NARGS"; continue; fi
    case "$1" in
        --no-serve) WANT_SERVE=0 ;;
        --serve-args) SERVE_ARGS=${2?--serve-args needs a value}; shift ;;
        --serve-args=*) SERVE_ARGS=${1#*=} ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done
check_common_options

find_nginx
for c in ffmpeg ffprobe python3 curl timeout; do command -v "$c" >/dev/null || die "$c not found"; done

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
            NOTES+=("vfetch serve has no --prefetch option: the seek runs use its default prefetching")
        fi
    fi
fi
if ((!SERVE)); then
    log "NOTE: serve mode not available: $SERVE_WHY"
    NOTES+=("serve mode not available: $SERVE_WHY")
fi

# ---------------------------------------------------------------- temp space
make_tmp vfplay $((400 * 1048576))   # clip copy + one cache (~80 MB each) + slack

# ---------------------------------------------------------------- the clip (cached)
mkdir -p "$CACHE_DIR"
CLIP_KEY=$(printf '%s\n' "${CLIP_ARGS[@]}" "$(ffmpeg -version 2>/dev/null | head -n 1)" | sha256sum | cut -c1-12)
CLIP="$CACHE_DIR/playback-clip-$CLIP_KEY.mp4"
clip_ok() {  # the cached clip is whole: 40 s long, moov last
    [[ -s $CLIP ]] || return 1
    local d; d=$(timeout 30 ffprobe -v error -show_entries format=duration -of csv=p=0 "$CLIP" 2>/dev/null) || return 1
    awk -v d="$d" -v want="$CLIP_SECONDS" 'BEGIN {exit !(d + 0 > want - 0.5 && d + 0 < want + 0.5)}'
}
if clip_ok; then
    log "clip: ${CLIP#"$REPO_ROOT"/} (cached)"
else
    log "clip: encoding ${CLIP#"$REPO_ROOT"/} (${CLIP_SECONDS} s, 16 Mbit/s; ~20 s of CPU) ..."
    timeout -k 5 900 ffmpeg -hide_banner -nostdin -loglevel error -y "${CLIP_ARGS[@]}" -f mp4 "$CLIP.tmp" </dev/null \
        || { rm -f -- "$CLIP.tmp"; die "ffmpeg could not make the clip"; }
    mv -f -- "$CLIP.tmp" "$CLIP"
    clip_ok || die "the new clip does not probe as ${CLIP_SECONDS} s"
fi
CLIP_BYTES=$(stat -c %s "$CLIP")
# where moov starts (top-level boxes), to show in the report that it is last
MOOV_AT=$(python3 - "$CLIP" <<'EOF'
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
)
[[ -n $MOOV_AT ]] || die "no moov box in $CLIP"
read -r moov_off _ <<<"$MOOV_AT"
((moov_off > CLIP_BYTES / 2)) || die "the clip's moov is not at the end (offset $moov_off)"
cp -- "$CLIP" "$WWW/clip.mp4"
chmod 0644 "$WWW/clip.mp4"
log "  $((CLIP_BYTES / 1048576)) MiB, $(awk -v b="$CLIP_BYTES" -v s="$CLIP_SECONDS" 'BEGIN {printf "%.2f", b * 8 / s / 1e6}') Mbit/s, boxes: ${MOOV_AT#* } (moov at byte $moov_off)"

# ---------------------------------------------------------------- network namespace
setup_netns vfplay ip
note_loopback
PORT=$(free_port 18080)
ORIGIN="http://127.0.0.1:$PORT"
CLIP_URL="$ORIGIN/play/clip.mp4"
FAST_URL="$ORIGIN/fast/clip.mp4"   # the same file without a rate limit (the check of the check)

# ---------------------------------------------------------------- nginx
start_nginx "$PORT"
got=$(inns curl -sf -r 0-7 -o /dev/null -w '%{http_code} %{content_type}' "$CLIP_URL") || die "nginx does not serve $CLIP_URL"
[[ $got == "206 video/mp4" ]] || die "nginx answered a range request for the clip with '$got', not '206 video/mp4'"

# ---------------------------------------------------------------- measurement
# Runs "$@" in the namespace under timeout (run_timed: sets R_RC, R_T0, R_T1,
# R_WALL).  With a samples file, stdout (ffmpeg -progress) goes through a
# reader that stamps each out_time_us with the wall clock: "epoch_s,out_time_us"
# lines.
stamp_progress() {
    local k v
    while IFS='=' read -r k v; do
        [[ $k == out_time_us ]] && printf '%s,%s\n' "$EPOCHREALTIME" "$v"
    done
    return 0
}
stamped() (  # samples cmd...: cmd's stdout through stamp_progress into samples; cmd's exit status
    set +o pipefail
    samples=$1; shift
    "$@" | stamp_progress >"$samples"
    exit "${PIPESTATUS[0]}"
)
measure() {  # timeout_s logfile samples(or "") cmd...
    local tmo=$1 logf=$2 samples=$3; shift 3
    if [[ -n $samples ]]; then
        run_timed stamped "$samples" "${INNS[@]}" timeout -k 5 "$tmo" "$@" 2>"$logf" </dev/null
    else
        run_timed "${INNS[@]}" timeout -k 5 "$tmo" "$@" >"$logf" 2>&1 </dev/null
    fi
}

# `vfetch serve` with a fresh, empty cache dir.  Sets SERVER_PID, SERVER_PORT,
# SERVER_LOG; returns 1 when it does not answer /status within SERVE_READY_S.
SERVER_N=0
start_server() {  # extra serve args...
    SERVER_N=$((SERVER_N + 1))
    local cache="$TMP/cache-$SERVER_N" i extra=()
    [[ -n $SERVE_ARGS ]] && read -r -a extra <<<"$SERVE_ARGS"
    rm -rf -- "$cache"; mkdir -p "$cache"
    SERVER_PORT=$(free_port $((18090 + SERVER_N)))  # a new port each time: no TIME_WAIT clash
    SERVER_LOG="$TMP/serve-$SERVER_N.log"
    # timeout (which forwards SIGINT to vfetch) also gives vfetch a default
    # SIGINT disposition, which a background job of a script does not have
    echo "==> vfetch serve #$SERVER_N: --port $SERVER_PORT --cache-dir EMPTY_DIR $* ${extra[*]}" >"$SERVER_LOG"
    "${INNS[@]}" timeout -k 5 "$T_SERVE" "$VFETCH_BIN" serve --port "$SERVER_PORT" --cache-dir "$cache" \
        "$@" "${extra[@]}" >>"$SERVER_LOG" 2>&1 </dev/null &
    SERVER_PID=$!
    for ((i = 0; i < SERVE_READY_S * 10; i++)); do
        if inns curl -sf -m 1 -o /dev/null "http://127.0.0.1:$SERVER_PORT/status"; then return 0; fi
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    log "   vfetch serve did not answer http://127.0.0.1:$SERVER_PORT/status within ${SERVE_READY_S} s:"
    sed -n '2,6s/^/      | /p' "$SERVER_LOG" >&2
    stop_server
    return 1
}
stop_server() {  # SIGINT, up to 5 s, then SIGKILL; removes its cache dir
    local i
    [[ -n $SERVER_PID ]] || return 0
    kill -INT "$SERVER_PID" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        log "   vfetch serve ignored SIGINT for 5 s; killing it"
        kill_tree "$SERVER_PID"
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    rm -rf -- "$TMP/cache-$SERVER_N"
    cat -- "$SERVER_LOG" >>"$SERVE_LOGS" 2>/dev/null || true   # every server's output, for the record
}
stream_url() {  # the player URL through the running server
    printf 'http://127.0.0.1:%s/stream?url=%s' "$SERVER_PORT" \
        "$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$CLIP_URL")"
}

readonly FF=(ffmpeg -hide_banner -nostdin -loglevel warning)
RUN_N=0
record() {  # mode rep measure  (after measure)
    local status; status=$(status_of "$R_RC")
    echo "$1,$2,$3,$R_RC,$status,$R_WALL,$R_T0,$R_T1" >>"$CSV"
    printf '   rep %d/%d  %-6s %-11s %8.3f s  %s\n' "$2" "$REPS" "$1" "$3" "$R_WALL" "$status" >&2
    if [[ $status != ok ]]; then
        FAILED=$((FAILED + 1))
        sed -n '1,5s/^/      | /p' "$LAST_LOG" >&2
    fi
}
player() {  # mode rep measure url: one timed player run
    local mode=$1 rep=$2 what=$3 url=$4 samples=""
    RUN_N=$((RUN_N + 1))
    LAST_LOG="$TMP/run-$RUN_N.log"
    case $what in
        ttff) measure "$T_SHORT" "$LAST_LOG" "" "${FF[@]}" -i "$url" -frames:v 1 -f null - ;;
        seek) measure "$T_SHORT" "$LAST_LOG" "" "${FF[@]}" -ss "$SEEK_TO" -i "$url" -frames:v 1 -f null - ;;
        play)
            samples="$TMP/samples-$RUN_N.csv"
            measure "$T_PLAY" "$LAST_LOG" "$samples" "${FF[@]}" -nostats -stats_period 0.5 -progress pipe:1 \
                -re -i "$url" -f null -
            # wall s since the start, media s
            awk -F, -v t0="$R_T0" -v m="$mode" -v r="$rep" \
                '$2 ~ /^[0-9]+$/ {printf "%s,%d,%.3f,%.3f\n", m, r, $1 - t0, $2 / 1e6}' "$samples" >>"$TIMELINE"
            ;;
    esac
    record "$mode" "$rep" "$what"
}
serve_player() {  # rep measure: a fresh server, one timed player run, stop
    local rep=$1 what=$2 url
    if [[ $what == seek ]]; then
        start_server "${PREFETCH_NONE[@]}" || { serve_failed "$rep" "$what"; return; }
        url=$(stream_url)
        # untimed: the head and the moov into the cache
        RUN_N=$((RUN_N + 1))
        LAST_LOG="$TMP/run-$RUN_N.log"
        measure "$T_SHORT" "$LAST_LOG" "" ffprobe -v error -show_entries format=duration -of csv=p=0 "$url"
        record serve "$rep" probe
    else
        start_server || { serve_failed "$rep" "$what"; return; }
        url=$(stream_url)
    fi
    player serve "$rep" "$what" "$url"
    stop_server
}
serve_failed() {  # rep measure
    echo "serve,$1,$2,,server_failed,nan,$EPOCHREALTIME,$EPOCHREALTIME" >>"$CSV"
    FAILED=$((FAILED + 1))
}

# framemd5 of the video frames (comments stripped) -> file; sets R_RC
framemd5() {  # url_or_path outfile
    RUN_N=$((RUN_N + 1))
    LAST_LOG="$TMP/run-$RUN_N.log"
    measure "$T_PLAY" "$TMP/md5-$RUN_N.out" "" ffmpeg -hide_banner -nostdin -loglevel error -i "$1" -map 0:v -f framemd5 -
    grep -v '^#' "$TMP/md5-$RUN_N.out" >"$2" || true
    cp -- "$TMP/md5-$RUN_N.out" "$LAST_LOG"
}
FRAMES=""
frames_check() {  # label url: sets FRAMES to yes, NO or failed (not in $(...): the run must stay killable)
    local out="$TMP/frames-$1.md5"
    framemd5 "$2" "$out"
    if ((R_RC != 0)); then
        log "   frames via $1: ffmpeg failed ($(status_of "$R_RC")):"
        { grep -v '^[0-9]' "$LAST_LOG" || true; } | sed -n '1,5s/^/      | /p' >&2
        FRAMES=failed
    elif cmp -s "$out" "$TMP/frames-local.md5"; then
        log "   frames via $1: $(wc -l <"$out") frames, identical to the local file's"
        FRAMES=yes
    else
        log "   frames via $1: $(wc -l <"$out") frames, NOT identical to the local file's ($(wc -l <"$TMP/frames-local.md5") frames)"
        diff "$TMP/frames-local.md5" "$out" | sed -n '1,6s/^/      | /p' >&2
        FRAMES=NO
    fi
}

# wrapper overhead (ip netns exec + timeout starting /bin/true)
measure_wrapper measure 5 /dev/null ""

# ---------------------------------------------------------------- metadata
STAMP=$(date +%Y%m%d-%H%M%S)
mkdir -p "$RESULTS_DIR"
CSV="$RESULTS_DIR/playback-$STAMP.csv"
TIMELINE="$RESULTS_DIR/playback-$STAMP.timeline.csv"
SUMMARY="$RESULTS_DIR/playback-$STAMP.summary.csv"
MD="$RESULTS_DIR/playback-$STAMP.md"
PNG="$RESULTS_DIR/playback-$STAMP-timeline.png"
SERVE_LOGS="$RESULTS_DIR/playback-$STAMP.serve.log"
RESULT_FILES=("$CSV" "$TIMELINE" "$SERVE_LOGS")

meta_common
meta version ffmpeg "$(ver ffmpeg -version)"
if [[ -x $VFETCH_BIN ]]; then
    meta version vfetch "${VFETCH_BIN#"$REPO_ROOT"/}; $(repo_state)"
fi
meta clip "$CLIP_SECONDS" "$CLIP_BYTES" "${MOOV_AT#* }" "$moov_off" "ffmpeg $(printf '%q ' "${CLIP_ARGS[@]}")OUT.mp4"
meta origin "$ORIGIN_RATE" "$CLIP_URL"
meta seek_to "$SEEK_TO"
meta wrapper_ms "$WRAP_MS"
meta serve "$SERVE" "$SERVE_WHY"
((SERVE)) && meta serve_cmd "vfetch serve --port PORT --cache-dir EMPTY_DIR $SERVE_ARGS" "${PREFETCH_NONE[*]}"
meta cmd play "$(printf '%q ' "${FF[@]}")-nostats -stats_period 0.5 -progress pipe:1 -re -i URL -f null -"
meta cmd ttff "$(printf '%q ' "${FF[@]}")-i URL -frames:v 1 -f null -"
meta cmd seek "$(printf '%q ' "${FF[@]}")-ss $SEEK_TO -i URL -frames:v 1 -f null -"
meta cmd probe "ffprobe -v error -show_entries format=duration -of csv=p=0 URL"
meta cmd frames "ffmpeg -i URL -map 0:v -f framemd5 -"
meta cmd info "vfetch info URL --json   (URL: the origin)"
meta_wrapper ""

echo "mode,rep,measure,exit_code,status,wall_s,start_ts,end_ts" >"$CSV"
echo "mode,rep,wall_s,media_s" >"$TIMELINE"

# ---------------------------------------------------------------- runs
FAILED=0
log ""
log "== playback: ${CLIP_SECONDS} s clip from $CLIP_URL at $ORIGIN_RATE per connection ($MODE), $REPS rep(s)"
FRAMES_LOCAL_RC=0
framemd5 "$WWW/clip.mp4" "$TMP/frames-local.md5"
FRAMES_LOCAL_RC=$R_RC
if ((FRAMES_LOCAL_RC != 0)) || [[ ! -s $TMP/frames-local.md5 ]]; then die "ffmpeg could not decode the local clip"; fi
frames_check origin "$FAST_URL"
FRAMES_DIRECT=$FRAMES
meta frames direct "$FRAMES_DIRECT" "origin without rate limit ($FAST_URL)"

for ((rep = 1; rep <= REPS; rep++)); do
    if ((rep % 2)); then order=(direct serve); else order=(serve direct); fi
    for mode in "${order[@]}"; do
        for what in ttff seek play; do
            if [[ $mode == direct ]]; then
                player direct "$rep" "$what" "$CLIP_URL"
            elif ((SERVE)); then
                serve_player "$rep" "$what"
            fi
        done
    done
done

# `vfetch info URL`: what it costs to learn what the clip is (moov at the end). Counted from
# nginx's log (the lines this run added); the target is <= 3 requests and <= moov + 512 KiB.
if [[ -x $VFETCH_BIN ]]; then
    lines=$(wc -l <"$RUN/access.log")
    RUN_N=$((RUN_N + 1))
    LAST_LOG="$TMP/run-$RUN_N.log"
    measure "$T_SHORT" "$LAST_LOG" "" "$VFETCH_BIN" info "$CLIP_URL" --json
    sleep 0.5   # nginx logs a response when it has ended
    read -r info_requests info_bytes < <(awk -v from="$lines" 'NR > from && $8 == "/play/clip.mp4" {n++; s += $5} END {printf "%d %d\n", n, s}' "$RUN/access.log")
    info_duration=$(python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["duration"])' <"$LAST_LOG" 2>/dev/null || echo nan)
    meta info "$R_RC" "$R_WALL" "$info_requests" "$info_bytes" "$((CLIP_BYTES - moov_off))" "$info_duration"
    log "   vfetch info URL: exit $R_RC, ${R_WALL}s, $info_requests requests, $info_bytes bytes (moov $((CLIP_BYTES - moov_off)) bytes), duration $info_duration s"
fi

FRAMES_SERVE="not available"
if ((SERVE)); then
    if start_server; then
        frames_check serve "$(stream_url)"
        FRAMES_SERVE=$FRAMES
        stop_server
    else
        FRAMES_SERVE=failed
    fi
    meta frames serve "$FRAMES_SERVE" "through vfetch serve (cold cache)"
fi

# ---------------------------------------------------------------- report
cp "$RUN/access.log" "$RESULTS_DIR/playback-$STAMP.access.log" 2>/dev/null || true
if python3 "$PLOTS_PY" playback --timeline "$TIMELINE" --duration "$CLIP_SECONDS" --out "$PNG" >&2; then
    meta plot "$(basename "$PNG")"
else
    log "NOTE: no timeline plot (plots.py failed or matplotlib is missing: scripts/install-deps.sh bench)"
fi
python3 "$REPORT_PY" --csv "$CSV" --meta "$META" --timeline "$TIMELINE" --summary "$SUMMARY" --md "$MD"
log ""
log "results: ${MD#"$REPO_ROOT"/}  (raw runs: ${CSV#"$REPO_ROOT"/}, summary: ${SUMMARY#"$REPO_ROOT"/}, timeline: ${TIMELINE#"$REPO_ROOT"/})"
((FAILED == 0)) || log "NOTE: $FAILED run(s) did not finish OK (see the status column)"
if [[ $FRAMES_SERVE == NO || $FRAMES_SERVE == failed || $FRAMES_DIRECT != yes ]]; then
    log ""
    log "playback.sh: FAILED: decoded frames not identical to the local file's (origin: $FRAMES_DIRECT, through vfetch serve: $FRAMES_SERVE)"
    exit 1
fi
