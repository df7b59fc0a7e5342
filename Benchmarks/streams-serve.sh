#!/usr/bin/env bash
# Streams through `vfetch serve` (issue 19): an HLS master playlist and a DASH
# manifest played in real time through the player cache from an origin too
# slow per connection for direct play, a seek during that play, and the same
# play again with the origin stopped.
#
# The streams are streams.sh's (streams_fixtures.sh): 60 s in three variants
# (720p 3.5 Mbit/s, 480p, 360p) cut into 4 s segments; here
#   hls   HLS master, MPEG-TS segments, each variant with its audio
#   dash  DASH, SegmentTemplate + SegmentTimeline, audio a set of its own
# A local nginx (Debian's package in its default configuration, nginx.conf.in)
# serves them at 128 KiB/s per connection (`limit_rate 128k`, /slowstreams/):
# the 720p variant needs about 470 KB/s, so a direct player falls far behind
# (ffmpeg reads an HLS stream's next segment on a second connection).  As root nginx, the servers and the players run in a throw-away
# network namespace (no link cap); otherwise on the host loopback.
#
# Per rep and stream (direct first in odd reps, serve first in even ones):
#   direct   the player straight from the origin
#   serve    a fresh `vfetch serve --cache-dir EMPTY_DIR` (its defaults:
#            --prefetch full) and the player through it; SEEK_AFTER s after it
#            started, a second player seeks to 40.2 s (ffmpeg cannot seek in
#            the middle of a play, so a second one stands for the seek)
#   offline  nginx stopped, a new `vfetch serve` on the serve run's cache
#            dir, the player again; then nginx is started again
# The player: ffmpeg -re -i URL -map <720p video> -map <its audio> with two
# outputs, a stream copy into OUT.mp4 and a decode to null.  Its wall time
# counts from start to exit; -progress samples give the timeline.  The copy
# must pass streams_check.py (the decoded frames equal the 720p variant's,
# 60 s within 0.2 s, the audio all there and in sync within 45 ms).
# The seek: ffmpeg -ss 40.2 -i URL -map <720p video> -frames:v 1 -f framemd5 -,
# timed from start to exit (open, the playlists, the probe, the seek, the
# first frame decoded); its frame must be the source's frame at 40.2 s.  The
# same seek straight from the origin is timed too, after each direct play.
# Fetched twice: from nginx's log of each serve run, for every segment the
# bytes the origin sent (from the Range header's first byte on, as many as
# the body had); bytes sent twice are counted.
#
# Usage: Benchmarks/streams-serve.sh [options]
#   --quick              1 rep of each (default 5 serve, 3 direct)
#   --reps N             repetitions per stream of the serve runs
#   --direct-reps N      repetitions of the direct runs (default 3: they take
#                        2-3 minutes each and only show that the origin is slow)
#   --streams LIST       comma-separated subset of hls,dash
#   --serve-args ARGS    extra arguments appended to `vfetch serve`
#   --no-netns           force the host loopback
#   -h, --help           this text
#
# vfetch is taken from $VFETCH, else <repo>/.build/release/vfetch.
# Results: Benchmarks/results/streams-serve-<date>.md, .csv (one line per run),
# .timeline.csv (wall s vs media s of the plays), .access.log (nginx),
# .serve.log (the servers' output), .meta.tsv, .sizes.tsv, -timeline.png.
# Needs: bash >= 5, nginx >= 1.17, ffmpeg + ffprobe, python3 (matplotlib for
# the plot), curl, coreutils; iproute2 (ip) for the namespace.
set -euo pipefail
export LC_ALL=C

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPORT_PY="$SCRIPT_DIR/streams_serve_report.py"

# ---------------------------------------------------------------- constants
readonly ORIGIN_RATE="128 KiB/s"     # limit_rate 128k in /slowstreams/ (nginx.conf.in)
readonly ALL_STREAMS=(hls dash)
# 6 frames into the segment at 40 s: ffmpeg backs a seek off by 3/23 s when the video has B-frames, and
# from exactly 40 s that lands in the segment before, which it then reads whole to drop its frames
# (a player seeking to 40 s loads the segment at 40 s)
readonly SEEK_TO=40.2
readonly SEEK_AFTER=10               # s into the serve run's play
readonly T_PLAY=240                  # limit for one play (s); direct takes about twice 60 s
readonly T_SEEK=120                  # limit for one seek
readonly LOG_SETTLE_S=0.5            # nginx logs a response when it has ended
DEFAULT_REPS=5

# ---------------------------------------------------------------- options
STREAMS=()
SERVE_ARGS=""
DIRECT_REPS=3
while (($#)); do
    common_option "$@"   # --quick, --reps, --no-netns, --help
    if ((NARGS)); then shift "$NARGS"; continue; fi
    case "$1" in
        --streams) IFS=, read -r -a _s <<<"${2:?--streams needs a value}"; STREAMS+=("${_s[@]}"); shift ;;
        --streams=*) IFS=, read -r -a _s <<<"${1#*=}"; STREAMS+=("${_s[@]}") ;;
        --serve-args) SERVE_ARGS=${2?--serve-args needs a value}; shift ;;
        --serve-args=*) SERVE_ARGS=${1#*=} ;;
        --direct-reps) DIRECT_REPS=${2:?--direct-reps needs a value}; shift ;;
        --direct-reps=*) DIRECT_REPS=${1#*=} ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done
check_common_options
((QUICK)) && DIRECT_REPS=1
[[ $DIRECT_REPS =~ ^[0-9]+$ ]] || die "--direct-reps must be a number"
((${#STREAMS[@]})) || STREAMS=("${ALL_STREAMS[@]}")
check_known stream "${ALL_STREAMS[*]}" "${STREAMS[@]}"

find_nginx
need_commands ffmpeg ffprobe python3 curl timeout
need_vfetch
NOTES=()

# ---------------------------------------------------------------- the streams (cached)
# shellcheck source-path=SCRIPTDIR source=streams_fixtures.sh
. "$SCRIPT_DIR/streams_fixtures.sh"

# ---------------------------------------------------------------- temp space, namespace, nginx
make_tmp vfstrserve $((800 * 1048576))   # the two streams (~100 MB), caches and outputs
for s in "${STREAMS[@]}"; do cp -r -- "$FIX/$s" "$WWW/$s"; done
chmod -R a+rX "$WWW"
(cd "$WWW" && find . -type f -printf '/slowstreams/%P\t%s\n') | sort >"$TMP/sizes.tsv"

setup_netns vfstrserve ip
note_loopback
PORT=$(free_port 18080)
ORIGIN="http://127.0.0.1:$PORT"
start_nginx "$PORT"
origin_url() { echo "$ORIGIN/slowstreams/$(stream_path "$1")"; }
for s in "${STREAMS[@]}"; do check_served "$(origin_url "$s")"; done

# ffmpeg's -map for the 720p video and its audio, probed through the unthrottled /fast/
declare -A FFMAP=()
for s in "${STREAMS[@]}"; do FFMAP[$s]=$(ffmap_of "$ORIGIN/fast/$(stream_path "$s")"); done
# the source's frame at SEEK_TO s (30 fps): what the seek must show first
SEEK_MD5=$(sed -n "$(awk -v t="$SEEK_TO" 'BEGIN {printf "%d", t * 30 + 1.5}')p" "$FIX/ref/ref-frames.md5")
[[ -n $SEEK_MD5 ]] || die "the reference has no frame at $SEEK_TO s"

# ---------------------------------------------------------------- servers
start_server() {  # cache_dir label: lib.sh's serve_start, for a play and its seek
    serve_start $((T_PLAY + T_SEEK + 60)) "$1" "$2" || die "vfetch serve did not start"
}

# ---------------------------------------------------------------- players
readonly FF=(ffmpeg -hide_banner -nostdin -loglevel warning)
stamp_progress() {  # ffmpeg -progress on stdin -> "epoch_s,out_time_us" lines
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
RUN_N=0
PLAY_PID=""
play_start() {  # stream url: the real-time player, in the background (PLAY_PID; play_wait ends it)
    local v a
    read -r v a <<<"${FFMAP[$1]}"
    RUN_N=$((RUN_N + 1))
    PLAY_LOG="$TMP/run-$RUN_N.log" PLAY_SAMPLES="$TMP/samples-$RUN_N.csv"
    rm -f "$OUT/out.mp4"
    PLAY_T0=$EPOCHREALTIME
    stamped "$PLAY_SAMPLES" "${INNS[@]}" timeout -k 5 "$T_PLAY" "${FF[@]}" -nostats -stats_period 0.5 -progress pipe:1 \
        -re -i "$2" -map "0:$v" -map "0:$a" -c copy -f mp4 "$OUT/out.mp4" -map "0:$v" -map "0:$a" -f null - \
        2>"$PLAY_LOG" </dev/null &
    PLAY_PID=$!
    MEASURE_PID=$PLAY_PID   # cleanup stops it
}
play_wait() {  # stream mode rep log_from: waits for the player, checks its copy, records the run
    local rc=0 status check="" t1 wall
    wait "$PLAY_PID" || rc=$?
    t1=$EPOCHREALTIME
    PLAY_PID="" MEASURE_PID=""
    wall=$(awk -v a="$PLAY_T0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
    status=$(status_of "$rc")
    sleep "$LOG_SETTLE_S"
    if [[ $status == ok ]]; then
        check_output "$OUT/out.mp4"
        check=$CHECK
        [[ ${check%%,*} == ok ]] || status=${check%%,*}
    fi
    awk -F, -v t0="$PLAY_T0" -v s="$1" -v m="$2" -v r="$3" \
        '$2 ~ /^[0-9]+$/ {printf "%s,%s,%d,%.3f,%.3f\n", s, m, r, $1 - t0, $2 / 1e6}' "$PLAY_SAMPLES" >>"$TIMELINE"
    echo "$1,$3,$2,play,$rc,$status,$wall,$PLAY_T0,$t1,$4,$(log_lines),,$check" >>"$CSV"
    report_run "$1" "$3" "$2" play "$wall" "$status" "$PLAY_LOG"
}
seek() {  # stream mode rep url log_from: one timed seek to SEEK_TO, its first frame checked
    local v a status md5 ok
    read -r v a <<<"${FFMAP[$1]}"
    RUN_N=$((RUN_N + 1))
    LAST_LOG="$TMP/run-$RUN_N.log"
    local saved=$MEASURE_PID   # the player plays on beside the seek
    rm -f "$TMP/seek.md5"
    run_timed "${INNS[@]}" timeout -k 5 "$T_SEEK" "${FF[@]}" -ss "$SEEK_TO" -i "$4" -map "0:$v" -frames:v 1 \
        -f framemd5 "$TMP/seek.md5" 2>"$LAST_LOG" </dev/null
    MEASURE_PID=$saved
    status=$(status_of "$R_RC")
    md5=$(grep -v '^#' "$TMP/seek.md5" 2>/dev/null | head -n 1 | awk -F, '{gsub(/ /, "", $NF); print $NF}') || md5=""
    ok=$([[ $md5 == "$SEEK_MD5" ]] && echo 1 || echo 0)
    [[ $status == ok && $ok == 0 ]] && status=wrong_frame
    echo "$1,$3,$2,seek,$R_RC,$status,$R_WALL,$R_T0,$R_T1,$5,$(log_lines),$ok," >>"$CSV"
    report_run "$1" "$3" "$2" seek "$R_WALL" "$status" "$LAST_LOG"
}
report_run() {  # stream rep mode what wall status log
    printf '   %-4s rep %d/%d  %-7s %-4s %8.3f s  %s\n' "$1" "$2" "$REPS" "$3" "$4" "$5" "$6" >&2
    if [[ $6 != ok ]]; then
        FAILED=$((FAILED + 1))
        sed -n '1,5s/^/      | /p' "$7" >&2
    fi
}

run_direct() {  # stream rep
    local url l0
    url=$(origin_url "$1")
    l0=$(log_lines)
    play_start "$1" "$url"
    play_wait "$1" direct "$2" "$l0"
    seek "$1" direct "$2" "$url" "$(log_lines)"
}
run_serve() {  # stream rep: cold, with the seek; then offline on the same cache
    local cache="$TMP/cache-$1-$2" url l0 i
    rm -rf -- "$cache"; mkdir -p "$cache"
    start_server "$cache" "$1 serve rep $2"
    url=$(serve_url "$(origin_url "$1")")
    l0=$(log_lines)
    play_start "$1" "$url"
    # the seek SEEK_AFTER s into the play (unless the player ended before)
    for ((i = 0; i < SEEK_AFTER * 10; i++)); do kill -0 "$PLAY_PID" 2>/dev/null || break; sleep 0.1; done
    seek "$1" serve "$2" "$url" "$l0"
    play_wait "$1" serve "$2" "$l0"
    serve_stop

    stop_nginx
    start_server "$cache" "$1 offline rep $2"
    url=$(serve_url "$(origin_url "$1")")
    l0=$(log_lines)
    play_start "$1" "$url"
    play_wait "$1" offline "$2" "$l0"
    serve_stop
    start_nginx "$PORT"
    rm -rf -- "$cache"
}

# ---------------------------------------------------------------- metadata
results_base streams-serve
CSV="$BASE.csv" TIMELINE="$BASE.timeline.csv" SERVE_LOGS="$BASE.serve.log"
RESULT_FILES=("$CSV" "$TIMELINE" "$SERVE_LOGS")
: >"$SERVE_LOGS"

meta_common
meta version ffmpeg "$(ver ffmpeg -version)"
meta_vfetch
meta load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
meta origin "$ORIGIN_RATE" "$ORIGIN/slowstreams/"
meta fixtures "${FIX#"$REPO_ROOT"/}" "$SECONDS_LONG" "$SEGMENT_S"
meta ref "$(tr -d '\n' <"$FIX/ref/ref.json")"
meta seek "$SEEK_TO" "$SEEK_AFTER"
meta direct_reps "$DIRECT_REPS"
for s in "${STREAMS[@]}"; do
    read -r v a <<<"${FFMAP[$s]}"
    meta stream "$s" "$(stream_kind "$s")" "/slowstreams/$(stream_path "$s")" "0:$v 0:$a"
done
meta cmd play "ffmpeg -re -i URL -map V -map A -c copy -f mp4 OUT.mp4 -map V -map A -f null -"
meta cmd seek "ffmpeg -ss $SEEK_TO -i URL -map V -frames:v 1 -f framemd5 OUT"
meta cmd serve "vfetch serve --port PORT --cache-dir DIR $SERVE_ARGS"

echo "stream,rep,mode,what,exit_code,status,wall_s,start_ts,end_ts,log_from,log_to,first_frame_ok,check,frames_ok,frames,width,height,span_s,format_duration_s,av_offset_s,audio_packets" >"$CSV"
echo "stream,mode,rep,wall_s,media_s" >"$TIMELINE"

# ---------------------------------------------------------------- runs
FAILED=0
for s in "${STREAMS[@]}"; do
    log ""
    log "== $s: $(stream_kind "$s"); $(origin_url "$s") at $ORIGIN_RATE per connection ($MODE), $REPS rep(s)"
    for ((rep = 1; rep <= REPS; rep++)); do
        if ((rep % 2)); then
            ((rep > DIRECT_REPS)) || run_direct "$s" "$rep"
            run_serve "$s" "$rep"
        else
            run_serve "$s" "$rep"
            ((rep > DIRECT_REPS)) || run_direct "$s" "$rep"
        fi
    done
done

# ---------------------------------------------------------------- report
meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
save_access_log "$BASE.access.log"
cp "$META" "$BASE.meta.tsv"
cp "$TMP/sizes.tsv" "$BASE.sizes.tsv"
python3 "$REPORT_PY" --base "$BASE"
log ""
log "results: ${BASE#"$REPO_ROOT"/}.md"
((FAILED == 0)) || log "NOTE: $FAILED run(s) did not finish OK or failed the check (see the status column)"
