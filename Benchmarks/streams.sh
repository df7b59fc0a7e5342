#!/usr/bin/env bash
# Streams benchmark (issue 18): HLS and DASH downloads, `vfetch get` against
# yt-dlp, ffmpeg and streamlink.
#
# A local nginx (Debian's package in its default configuration, nginx.conf.in)
# serves 60 s streams at 1 MiB/s per connection (`limit_rate 1m`, /streams/).
# As root it runs in a throw-away network namespace whose loopback carries an
# 800 Mbit/s token-bucket link cap (as e2e.sh); all clients run there too.
# Without root, the host loopback and no cap.
#
# The streams, made once with ffmpeg and cached under
# Benchmarks/results/.cache/ (keyed by a hash of the commands): a 60 s source
# (testsrc2 1280x720@30 + a sine tone; x264 veryfast, CBR, a key frame every
# 4 s and no scene cut; AAC 128 kbit/s) in three variants, 720p (3.5 Mbit/s),
# 480p (1.5) and 360p (0.8), each cut with `-c copy` into 4 s segments as
#   hls        HLS master playlist of the 3 variants, MPEG-TS segments
#   fmp4       the same with fMP4 segments (EXT-X-MAP)
#   byterange  the same, each variant one .ts file addressed by EXT-X-BYTERANGE
#   aes        the same as hls, segments encrypted with AES-128
#   dash       DASH: one video adaptation set (3 representations) and one audio
#              set, SegmentTemplate with SegmentTimeline
# Every tool must fetch the best variant (720p) with its audio.  A run counts
# only when its output passes the check (streams_check.py): the decoded video
# frames equal the 720p variant's, frame for frame (framemd5's MD5 column),
# the output spans 60 s within 0.2 s, and it has the audio, all of it, in
# sync.  A run whose output fails is reported as failed, not timed.
#
# Tools (rep by rep, the starting tool rotating):
#   vfetch      vfetch get URL -o OUT.mp4
#   vfetch-base the same with the binary in $VFETCH_BASE (e.g. main before a change)
#   ytdlp16     yt-dlp -N 16 (also ytdlp4: -N 4, ytdlp1: -N 1)
#   ffmpeg      ffmpeg -i URL -map <720p video> -map <its audio> -c copy OUT.mp4
#   streamlink  streamlink --stream-segment-threads 10 URL best (its own
#               container: MPEG-TS, fragmented MP4, or Matroska for DASH)
# yt-dlp and streamlink are pinned versions from PyPI, installed into a venv
# under Benchmarks/results/.cache/ on the first run.
#
# Resume (vfetch only): the hls download killed with SIGKILL at KILLS random
# moments (0.5-2 s into each run, vfetch capped at 4 MiB/s so that the kills land mid-download) and rerun with the same command each time,
# the last run to the end; then, from nginx's log, how often each segment was
# fetched in full (status 200, the whole file): a finished segment must not
# be fetched twice.  The output must pass the check.  It runs with `-c 4`:
# a segment takes about 1 s here, so with vfetch's 32 connections all 15
# finish together at about 1 s, and a kill finds either none finished or all;
# with 4 they finish a few at a time across the kills.
#
# Usage: Benchmarks/streams.sh [options]
#   --quick              1 rep, tools vfetch,ytdlp16,streamlink (unless --tools)
#   --reps N             repetitions per stream and tool (default 3, quick 1)
#   --streams LIST       comma-separated subset of hls,fmp4,byterange,aes,dash
#   --tools LIST         comma-separated subset of vfetch,ytdlp16,ytdlp4,ytdlp1,
#                        ffmpeg,streamlink (default: all), and vfetch-base
#   --kills N            kills in the resume scenario (default 5; 0: no resume)
#   --resume-args ARGS   vfetch's extra arguments there (default "-c 4 --max-speed 4M": vfetch
#                        takes about 0.4 s here, too short to kill it mid-download; at 4 MiB/s a
#                        run takes about 7 s and segments finish a few at a time across the kills)
#   --vfetch-args ARGS   extra arguments appended to the vfetch command
#   --timeout SEC        per-run time limit (default 240)
#   --no-netns           force the host loopback (no link cap)
#   -h, --help           this text
#
# vfetch is taken from $VFETCH, else <repo>/.build/release/vfetch; when it is
# missing it is skipped.
# Results: Benchmarks/results/streams-<date>.md, .csv (one line per run),
# .resume.csv, .access.log (nginx's log of all runs), .logs/ (the tools'
# output of every failed run), and .meta.tsv and .sizes.tsv, with which
# streams_report.py makes the report again.
# Needs: bash >= 5, nginx >= 1.17, ffmpeg + ffprobe, python3 with venv and
# pip (PyPI), curl, /usr/bin/time (GNU), coreutils; iproute2 (ip, tc) for the namespace.
set -euo pipefail
export LC_ALL=C

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPORT_PY="$SCRIPT_DIR/streams_report.py"

# ---------------------------------------------------------------- constants
readonly ORIGIN_RATE="1 MiB/s"       # limit_rate 1m in /streams/ (nginx.conf.in)
readonly YTDLP_PIN="yt-dlp[default]==2026.10.26"   # [default]: with pycryptodomex (AES), as its README installs it
readonly STREAMLINK_PIN="streamlink==8.6.3"
readonly ALL_STREAMS=(hls fmp4 byterange aes dash)
readonly ALL_TOOLS=(vfetch ytdlp16 ytdlp4 ytdlp1 ffmpeg streamlink)
readonly QUICK_TOOLS=(vfetch ytdlp16 streamlink)
readonly KILL_MIN_MS=500 KILL_SPAN_MS=1500
readonly LOG_SETTLE_S=0.3            # nginx logs a response when it has ended

# ---------------------------------------------------------------- options
STREAMS=()
TOOLS=()
KILLS=5
VFETCH_ARGS=""
RESUME_ARGS="-c 4 --max-speed 4M"
RUN_TIMEOUT=240
while (($#)); do
    common_option "$@"   # --quick, --reps, --no-netns, --help
    if ((NARGS)); then shift "$NARGS"; continue; fi
    case "$1" in
        --streams) IFS=, read -r -a _s <<<"${2:?--streams needs a value}"; STREAMS+=("${_s[@]}"); shift ;;
        --streams=*) IFS=, read -r -a _s <<<"${1#*=}"; STREAMS+=("${_s[@]}") ;;
        --tools) IFS=, read -r -a TOOLS <<<"${2:?--tools needs a value}"; shift ;;
        --tools=*) IFS=, read -r -a TOOLS <<<"${1#*=}" ;;
        --kills) KILLS=${2:?--kills needs a value}; shift ;;
        --kills=*) KILLS=${1#*=} ;;
        --resume-args) RESUME_ARGS=${2?--resume-args needs a value}; shift ;;
        --resume-args=*) RESUME_ARGS=${1#*=} ;;
        --vfetch-args) VFETCH_ARGS=${2?--vfetch-args needs a value}; shift ;;
        --vfetch-args=*) VFETCH_ARGS=${1#*=} ;;
        --timeout) RUN_TIMEOUT=${2:?--timeout needs a value}; shift ;;
        --timeout=*) RUN_TIMEOUT=${1#*=} ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done
check_common_options
if ! [[ $KILLS =~ ^[0-9]+$ ]] || ((KILLS > 50)); then die "--kills must be 0..50"; fi
if ! [[ $RUN_TIMEOUT =~ ^[0-9]+$ ]] || ((RUN_TIMEOUT < 10)); then die "--timeout must be whole seconds, >= 10"; fi
((${#STREAMS[@]})) || STREAMS=("${ALL_STREAMS[@]}")
if ((!${#TOOLS[@]})); then
    if ((QUICK)); then TOOLS=("${QUICK_TOOLS[@]}"); else TOOLS=("${ALL_TOOLS[@]}"); fi
fi
check_known stream "${ALL_STREAMS[*]}" "${STREAMS[@]}"
check_known tool "${ALL_TOOLS[*]} vfetch-base" "${TOOLS[@]}"

find_nginx
need_commands ffmpeg ffprobe python3 curl timeout sha256sum /usr/bin/time

# ---------------------------------------------------------------- peers (a pinned venv)
NOTES=()
mkdir -p "$CACHE_DIR"
PEER_BIN=""      # where yt-dlp and streamlink are
PEER_SOURCE=""   # what the report says about them
need_py_peers=0
for t in "${TOOLS[@]}"; do [[ $t == ytdlp* || $t == streamlink ]] && need_py_peers=1; done
if ((need_py_peers)); then
    venv="$CACHE_DIR/venv-streams-$(printf '%s\n' "$YTDLP_PIN" "$STREAMLINK_PIN" "$(python3 -VV 2>&1)" "$(command -v python3)" \
        | sha256sum | cut -c1-12)"
    if [[ ! -f $venv/.complete ]]; then
        log "peers: installing $YTDLP_PIN and $STREAMLINK_PIN into ${venv#"$REPO_ROOT"/} (pip, once) ..."
        rm -rf -- "$venv"
        # (a venv cannot be moved after it is made: it is made in place and marked complete)
        if python3 -m venv "$venv" >"$CACHE_DIR/venv.log" 2>&1 \
            && timeout 600 "$venv/bin/python" -m pip install -q --disable-pip-version-check "$YTDLP_PIN" "$STREAMLINK_PIN" \
                >>"$CACHE_DIR/venv.log" 2>&1; then
            touch "$venv/.complete"
        else
            log "NOTE: could not make the peers' venv (see ${CACHE_DIR#"$REPO_ROOT"/}/venv.log: $(tail -n 1 "$CACHE_DIR/venv.log"))"
            rm -rf -- "$venv"
        fi
    fi
    if [[ -f $venv/.complete ]]; then
        PEER_BIN="$venv/bin"
        PEER_SOURCE="pinned, from PyPI in a venv"
    else
        PEER_SOURCE="from PATH (NOT the pinned versions: the venv could not be made)"
        NOTES+=("yt-dlp and streamlink from PATH: the venv with $YTDLP_PIN and $STREAMLINK_PIN could not be made")
    fi
fi
peer() {  # name: its path, or nothing when it is not there
    if [[ -n $PEER_BIN && -x $PEER_BIN/$1 ]]; then echo "$PEER_BIN/$1"; else command -v "$1" || true; fi
}
YTDLP=$(peer yt-dlp)
STREAMLINK=$(peer streamlink)

ACTIVE_TOOLS=()
for t in "${TOOLS[@]}"; do
    why=""
    case $t in
        vfetch*) bin=$(vfetch_bin "$t"); [[ -n $bin && -x $bin ]] || why="binary not found ('${bin#"$REPO_ROOT"/}'; set \$VFETCH / \$VFETCH_BASE or run 'swift build -c release')" ;;
        ytdlp*) [[ -n $YTDLP ]] || why="yt-dlp not installed" ;;
        streamlink) [[ -n $STREAMLINK ]] || why="streamlink not installed" ;;
        ffmpeg) ;;
    esac
    if [[ -z $why ]]; then
        ACTIVE_TOOLS+=("$t")
    else
        log "NOTE: $t skipped: $why"
        NOTES+=("$t skipped: $why")
    fi
done
((${#ACTIVE_TOOLS[@]})) || die "no tool to run"
has_tool() { [[ " ${ACTIVE_TOOLS[*]} " == *" $1 "* ]]; }
has_tool vfetch || KILLS=0

# ---------------------------------------------------------------- the streams (cached)
# SECONDS_LONG, SEGMENT_S, the ffmpeg commands, FIX, stream_path, stream_kind
# shellcheck source-path=SCRIPTDIR source=streams_fixtures.sh
. "$SCRIPT_DIR/streams_fixtures.sh"

# ---------------------------------------------------------------- temp space, namespace, nginx
make_tmp vfstreams $((600 * 1048576))   # the streams (~230 MB) + outputs
for s in "${ALL_STREAMS[@]}"; do cp -r -- "$FIX/$s" "$WWW/$s"; done
chmod -R a+rX "$WWW"
# every file nginx serves and its size, for the report (full responses, duplicates)
(cd "$WWW" && find . -type f -printf '/streams/%P\t%s\n') | sort >"$TMP/sizes.tsv"

setup_link_netns vfstreams
set_cap 1
PORT=$(free_port 18080)
BASE_URL="http://127.0.0.1:$PORT"
start_nginx "$PORT"
for s in "${STREAMS[@]}"; do check_served "$BASE_URL/streams/$(stream_path "$s")"; done

# ffmpeg's -map for the 720p video and its audio, probed once through the unthrottled /fast/ (untimed)
declare -A FFMAP=()
for s in "${STREAMS[@]}"; do FFMAP[$s]=$(ffmap_of "$BASE_URL/fast/$(stream_path "$s")"); done

# ---------------------------------------------------------------- commands
# The command line for one download.  Sets CMD (array) and OUTFILE.
tool_cmd() {  # tool stream url
    local tool=$1 stream=$2 url=$3 extra=() v a
    OUTFILE="$OUT/out.mp4"
    case $tool in
        vfetch|vfetch-base)
            [[ -n $VFETCH_ARGS ]] && read -r -a extra <<<"$VFETCH_ARGS"
            CMD=("$(vfetch_bin "$tool")" get "$url" -o "$OUTFILE" "${extra[@]}") ;;
        ytdlp*)
            CMD=("$YTDLP" --ignore-config --no-cache-dir --no-progress -N "${tool#ytdlp}" --abort-on-unavailable-fragments
                --merge-output-format mp4 -o "$OUT/out.%(ext)s" "$url") ;;
        ffmpeg)
            read -r v a <<<"${FFMAP[$stream]}"
            CMD=(ffmpeg -hide_banner -nostdin -loglevel error -y -i "$url" -map "0:$v" -map "0:$a" -c copy "$OUTFILE") ;;
        streamlink)
            case $stream in fmp4) OUTFILE="$OUT/out.mp4" ;; dash) OUTFILE="$OUT/out.mkv" ;; *) OUTFILE="$OUT/out.ts" ;; esac
            CMD=("$STREAMLINK" --no-config --stream-segment-threads 10 --force -o "$OUTFILE" "$url" best) ;;
    esac
}
tool_cmd_display() {  # tool stream: the same with placeholders, for the report
    local shown
    tool_cmd "$1" "$2" URL
    CMD[0]=${CMD[0]##*/}
    shown=$(printf '%q ' "${CMD[@]}")
    shown=${shown% }
    printf '%s' "${shown//$OUT\//OUT/}"
}

# ---------------------------------------------------------------- measurement
# what nginx logged between two line numbers: "requests bytes connections"
log_window() {  # from to
    awk -v a="$1" -v b="$2" 'NR > a && NR <= b && $8 ~ /^\/streams\// {n++; s += $5; c[$2] = 1}
        END {printf "%d %d %d\n", n, s, length(c)}' "$ACCESS"
}

measure_wrapper

# the check of the check: the 720p TS segments, concatenated locally, pass
cat "$WWW"/hls/720p/seg*.ts >"$OUT/concat.ts"
check_output "$OUT/concat.ts"
REF_CHECK=${CHECK%%,*}
clean_out
[[ $REF_CHECK == ok ]] || die "the check fails on the 720p segments themselves ($CHECK): fixtures or check broken"

# ---------------------------------------------------------------- metadata
results_base streams
CSV="$BASE.csv"
RCSV="$BASE.resume.csv"
MD="$BASE.md"
LOGS="$BASE.logs"
RESULT_FILES=("$CSV" "$RCSV" "$LOGS" "$MD" "$BASE.access.log" "$BASE.meta.tsv" "$BASE.sizes.tsv")

meta_common
meta version ffmpeg "$(ver ffmpeg -version)"
[[ -n $YTDLP ]] && meta version yt-dlp "$(ver "$YTDLP" --version) ($PEER_SOURCE)"
[[ -n $STREAMLINK ]] && meta version streamlink "$(ver "$STREAMLINK" --version) ($PEER_SOURCE)"
if has_tool vfetch; then
    meta_vfetch
fi
meta version python3 "$(ver python3 --version)"
meta load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
meta link "$LINK_RATE" "$TBF_BURST" "$TBF_LATENCY"
meta origin "$ORIGIN_RATE" "$BASE_URL/streams/"
meta wrapper_ms "$WRAP_MS"
meta timeout "$RUN_TIMEOUT"
meta fixtures "${FIX#"$REPO_ROOT"/}" "$SECONDS_LONG" "$SEGMENT_S"
meta fixture_cmd encode "ffmpeg $(printf '%q ' "${ENCODE_ARGS[@]}")"
meta fixture_cmd hls "ffmpeg $(printf '%q ' "${HLS_ARGS[@]}")"
meta fixture_cmd fmp4 "ffmpeg $(printf '%q ' "${FMP4_ARGS[@]}")"
meta fixture_cmd byterange "ffmpeg $(printf '%q ' "${BYTERANGE_ARGS[@]}")"
meta fixture_cmd aes "ffmpeg $(printf '%q ' "${AES_ARGS[@]}")"
meta fixture_cmd dash "ffmpeg $(printf '%q ' "${DASH_ARGS[@]}")"
meta ref "$(tr -d '\n' <"$FIX/ref/ref.json")"
meta ref_check "$REF_CHECK"
for s in "${STREAMS[@]}"; do
    meta stream "$s" "$(stream_kind "$s")" "/streams/$(stream_path "$s")"
    for t in "${ACTIVE_TOOLS[@]}"; do meta command "$s" "$t" "$(tool_cmd_display "$t" "$s")"; done
done
for t in "${ACTIVE_TOOLS[@]}"; do meta tool "$t"; done
meta_wrapper
for n in "${NOTES[@]}"; do meta note "$n"; done

echo "stream,rep,order,tool,exit_code,status,wall_s,user_s,sys_s,maxrss_kib,requests,bytes,conns,load1,start_ts,end_ts,check,frames_ok,frames,width,height,span_s,format_duration_s,av_offset_s,audio_packets" >"$CSV"
echo "run,killed_after_s,kill_ts,exit_code,start_ts,end_ts,wall_s,queued_bytes" >"$RCSV"

# ---------------------------------------------------------------- runs
FAILED=0
for s in "${STREAMS[@]}"; do
    url="$BASE_URL/streams/$(stream_path "$s")"
    NT=${#ACTIVE_TOOLS[@]}
    log ""
    log "== $s: $(stream_kind "$s"); $url at $ORIGIN_RATE per connection, link cap: $([[ $MODE == netns ]] && echo "$LINK_RATE" || echo none), $REPS rep(s)"
    for ((rep = 1; rep <= REPS; rep++)); do
        for ((k = 0; k < NT; k++)); do
            tool=${ACTIVE_TOOLS[$(((k + rep - 1) % NT))]}   # rotate the start tool per rep
            clean_out
            tool_cmd "$tool" "$s" "$url"
            l0=$(log_lines); ld=$(load1)
            measure "$RUN_TIMEOUT" "$TMP/tool.log" "${CMD[@]}"
            rc=$R_RC wall=$R_WALL t0=$R_T0 t1=$R_T1   # (the check runs through run_timed too)
            sleep "$LOG_SETTLE_S"
            read -r nreq nbytes nconn < <(log_window "$l0" "$(log_lines)")
            read -r _ t_user t_sys t_rss <<<"$R_TIME"
            status=$(status_of "$rc")
            CHECK=",,,,,,,,"
            if [[ $status == ok ]]; then
                check_output "$OUTFILE"
                [[ ${CHECK%%,*} == ok ]] || status=${CHECK%%,*}
            fi
            echo "$s,$rep,$k,$tool,$rc,$status,$wall,$t_user,$t_sys,$t_rss,$nreq,$nbytes,$nconn,$ld,$t0,$t1,$CHECK" >>"$CSV"
            printf '   rep %d/%d  %-10s %8.2f s  cpu %6.2f s  %3d req  %6.1f MiB  %3d conn  %s\n' \
                "$rep" "$REPS" "$tool" "$wall" "$(awk -v u="$t_user" -v s="$t_sys" 'BEGIN {print u + s}')" \
                "$nreq" "$(awk -v b="$nbytes" 'BEGIN {print b / 1048576}')" "$nconn" "$status" >&2
            if [[ $status != ok ]]; then
                FAILED=$((FAILED + 1))
                mkdir -p "$LOGS"
                cp -- "$TMP/tool.log" "$LOGS/$s-$tool-rep$rep.log"
                { echo "check: $CHECK"; cat "$TMP/check.err" 2>/dev/null; } >>"$LOGS/$s-$tool-rep$rep.log"
                sed -n '1,5s/^/      | /p' "$TMP/tool.log" >&2
            fi
        done
    done
done

# ---------------------------------------------------------------- resume after kill -9 (vfetch, hls)
# Bytes nginx has written that vfetch has not read: nginx's send queues, the link's queue (tbf) and vfetch's
# receive queues.  A kill loses them whatever vfetch does (the floor of what a kill costs); nginx's log counts
# them as sent.
queued_bytes() {
    local received sending link=0
    received=$(inns ss -Htn state established "( dport = :$PORT )" 2>/dev/null | awk '{s += $1} END {print s + 0}')
    sending=$(inns ss -Htn state established "( sport = :$PORT )" 2>/dev/null | awk '{s += $2} END {print s + 0}')
    if [[ $MODE == netns ]]; then
        link=$(tc_stats | awk '{for (i = 1; i < NF; i++) if ($i == "backlog") {
            v = $(i + 1); m = 1; if (v ~ /Kb$/) m = 1024; else if (v ~ /Mb$/) m = 1048576; sub(/[KM]?b$/, "", v); printf "%d\n", v * m; exit}}')
    fi
    echo $((received + sending + ${link:-0}))
}

RESUME_STATUS=""
if ((KILLS > 0)); then
    url="$BASE_URL/streams/$(stream_path hls)"
    clean_out
    saved_args=$VFETCH_ARGS
    VFETCH_ARGS="$VFETCH_ARGS $RESUME_ARGS"
    tool_cmd vfetch hls "$url"
    meta resume_kill_window "$KILL_MIN_MS" "$((KILL_MIN_MS + KILL_SPAN_MS))"
    log ""
    log "== resume: vfetch on hls, $KILLS kill(s) -9 at $KILL_MIN_MS-$((KILL_MIN_MS + KILL_SPAN_MS)) ms, then to the end"
    RESUME_L0=$(log_lines)
    meta resume_window_start "$RESUME_L0"
    meta resume_command "$(tool_cmd_display vfetch hls)"
    VFETCH_ARGS=$saved_args
    rc=1
    for ((run = 1; run <= KILLS + 1; run++)); do
        t0=$EPOCHREALTIME
        delay="" kill_ts="" queued=""
        if ((run <= KILLS)); then
            # ip netns exec execs vfetch, so the pid is vfetch's own
            "${INNS[@]}" "${CMD[@]}" </dev/null >"$TMP/resume-$run.log" 2>&1 &
            MEASURE_PID=$!
            delay=$(random_delay "$KILL_MIN_MS" "$KILL_SPAN_MS")
            sleep "$delay"
            queued=$(queued_bytes)
            kill_ts=$EPOCHREALTIME
            kill -KILL "$MEASURE_PID" 2>/dev/null || true
            rc=0; wait "$MEASURE_PID" 2>/dev/null || rc=$?
            MEASURE_PID=""
        else
            run_timed "${INNS[@]}" timeout -k 5 "$RUN_TIMEOUT" "${CMD[@]}" </dev/null >"$TMP/resume-$run.log" 2>&1
            rc=$R_RC
        fi
        t1=$EPOCHREALTIME
        ((run <= KILLS && rc != 137)) && kill_ts=""   # it had ended before its kill
        echo "$run,$delay,$kill_ts,$rc,$t0,$t1,$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}'),$queued" >>"$RCSV"
        log "   run $run  $([[ -n $kill_ts ]] && echo "killed after ${delay}s" || echo "${delay:+no kill: ended before ${delay}s, }to the end")  exit $rc"
        if ((rc != 0 && rc != 137)); then
            mkdir -p "$LOGS"; cp -- "$TMP/resume-$run.log" "$LOGS/resume-run$run.log"
            sed -n '1,5s/^/      | /p' "$TMP/resume-$run.log" >&2
        fi
        ((rc == 0)) && break   # finished (also when it beat a kill)
    done
    sleep "$LOG_SETTLE_S"
    meta resume_window_end "$(log_lines)"
    if ((rc == 0)); then
        check_output "$OUTFILE"
        RESUME_STATUS=${CHECK%%,*}
    else
        RESUME_STATUS="exit_$rc"
        CHECK=",,,,,,,,"
    fi
    meta resume_check "$RESUME_STATUS" "$CHECK"
    log "   output: $RESUME_STATUS ($CHECK)"
    clean_out
fi

# ---------------------------------------------------------------- report
meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
save_access_log "$BASE.access.log"
# the report's other inputs, so that it can be made again from the results alone
cp "$META" "$BASE.meta.tsv"
cp "$TMP/sizes.tsv" "$BASE.sizes.tsv"
python3 "$REPORT_PY" --csv "$CSV" --meta "$BASE.meta.tsv" --resume-csv "$RCSV" \
    --access-log "$BASE.access.log" --sizes "$BASE.sizes.tsv" --md "$MD"
log ""
log "results: ${MD#"$REPO_ROOT"/}  (raw runs: ${CSV#"$REPO_ROOT"/}, nginx log: streams-$STAMP.access.log$([[ -d $LOGS ]] && echo ", failed runs' output: ${LOGS#"$REPO_ROOT"/}/"))"
((FAILED == 0)) || log "NOTE: $FAILED run(s) did not finish OK or failed the check (see the status column)"
if [[ -n $RESUME_STATUS && $RESUME_STATUS != ok ]]; then
    log "streams.sh: FAILED: the resumed download's output: $RESUME_STATUS"
    exit 1
fi
