# shellcheck shell=bash
# The streams of Benchmarks/streams.sh and streams-serve.sh, made once with
# ffmpeg and cached under Benchmarks/results/.cache/ (keyed by a hash of the
# commands): a 60 s source in three variants, each cut into 4 s segments as
# hls, fmp4, byterange, aes and dash (streams.sh's header says what each is),
# and the 720p variant's reference for streams_check.py.  Sourced after lib.sh;
# sets FIX, the fixtures' directory, and defines stream_path, stream_kind,
# ffmap_of (the 720p variant's -map) and check_output.
# shellcheck disable=SC2034  # the constants are for the scripts that source it

readonly SECONDS_LONG=60             # the streams' length
readonly SEGMENT_S=4                 # = the GOP: 120 frames at 30 fps

# The source and its three variants in one pass (the same pictures scaled).
readonly X264=(-c:v libx264 -preset veryfast -pix_fmt yuv420p -g 120 -keyint_min 120 -sc_threshold 0
    -x264-params nal-hrd=cbr)
readonly ENCODE_ARGS=(-f lavfi -i "testsrc2=size=1280x720:rate=30" -f lavfi -i "sine=frequency=440:sample_rate=48000"
    -filter_complex "[0:v]split=3[v0][v1][v2];[v1]scale=854:480[v1s];[v2]scale=640:360[v2s]"
    -t "$SECONDS_LONG" -map "[v0]" -map 1:a "${X264[@]}" -b:v 3500k -minrate 3500k -maxrate 3500k -bufsize 3500k
    -c:a aac -b:a 128k -ac 2 -movflags +faststart v720.mp4
    -t "$SECONDS_LONG" -map "[v1s]" -map 1:a "${X264[@]}" -b:v 1500k -minrate 1500k -maxrate 1500k -bufsize 1500k
    -c:a aac -b:a 128k -ac 2 -movflags +faststart v480.mp4
    -t "$SECONDS_LONG" -map "[v2s]" -map 1:a "${X264[@]}" -b:v 800k -minrate 800k -maxrate 800k -bufsize 800k
    -c:a aac -b:a 128k -ac 2 -movflags +faststart v360.mp4)
# The HLS kinds: the three variants with their audio, 720p first in the master playlist.
readonly HLS_IN=(-i v720.mp4 -i v480.mp4 -i v360.mp4 -map 0:v -map 0:a -map 1:v -map 1:a -map 2:v -map 2:a -c copy
    -f hls -hls_time "$SEGMENT_S" -hls_playlist_type vod -hls_list_size 0 -master_pl_name master.m3u8
    -var_stream_map "v:0,a:0,name:720p v:1,a:1,name:480p v:2,a:2,name:360p")
readonly HLS_ARGS=("${HLS_IN[@]}" -hls_segment_filename 'hls/%v/seg%03d.ts' 'hls/%v/index.m3u8')
readonly FMP4_ARGS=("${HLS_IN[@]}" -hls_segment_type fmp4 -hls_fmp4_init_filename init.mp4
    -hls_segment_filename 'fmp4/%v/seg%03d.m4s' 'fmp4/%v/index.m3u8')
readonly BYTERANGE_ARGS=("${HLS_IN[@]}" -hls_flags single_file -hls_segment_filename 'byterange/%v/all.ts'
    'byterange/%v/index.m3u8')
# key.info: the key's URI as the playlists give it (relative to a variant's
# playlist), then the key file (16 random bytes, made with the fixtures)
readonly AES_ARGS=("${HLS_IN[@]}" -hls_key_info_file key.info -hls_segment_filename 'aes/%v/seg%03d.ts' 'aes/%v/index.m3u8')
# shellcheck disable=SC2016  # the $...$ are DASH template identifiers, for ffmpeg
readonly DASH_ARGS=(-i v720.mp4 -i v480.mp4 -i v360.mp4 -map 0:v -map 1:v -map 2:v -map 0:a -c copy
    -f dash -seg_duration "$SEGMENT_S" -use_template 1 -use_timeline 1 -adaptation_sets "id=0,streams=v id=1,streams=a"
    -init_seg_name 'init-$RepresentationID$.m4s' -media_seg_name 'seg-$RepresentationID$-$Number%05d$.m4s'
    dash/manifest.mpd)


CHECK_PY="$SCRIPT_DIR/streams_check.py"
# Checks a tool's output against the 720p variant (streams_check.py, killable):
# the frames, the span, the audio.  Sets CHECK, its CSV fragment (9 fields).
check_output() {  # file
    mkdir -p "$TMP/checked"
    run_timed python3 "$CHECK_PY" check "$1" --ref "$FIX/ref" --cache "$TMP/checked" --seconds "$SECONDS_LONG" \
        >"$TMP/check.out" 2>"$TMP/check.err" </dev/null
    CHECK=$(tail -n 1 "$TMP/check.out")
    if ((R_RC != 0)) || [[ -z $CHECK ]]; then CHECK="check_failed,,,,,,,,"; fi
}

# (FIXTURE_VERSION: raise it when the layout or streams_check.py's reference files change)
readonly FIXTURE_VERSION=1
FIXTURE_KEY=$(printf '%s\n' "$FIXTURE_VERSION" "${ENCODE_ARGS[@]}" "${HLS_ARGS[@]}" "${FMP4_ARGS[@]}" "${BYTERANGE_ARGS[@]}" \
    "${AES_ARGS[@]}" "${DASH_ARGS[@]}" "$(ffmpeg -version 2>/dev/null | head -n 1)" | sha256sum | cut -c1-12)
FIX="$CACHE_DIR/streams-$FIXTURE_KEY"
ff() { timeout -k 5 900 ffmpeg -hide_banner -nostdin -loglevel error -y "$@" </dev/null; }
make_fixtures() {  # into $FIX, through a temp dir renamed when all is there
    local d="$FIX.tmp.$$"
    rm -rf -- "$d"; mkdir -p "$d"/{hls,fmp4,byterange,aes,dash,ref}
    (
        cd "$d"
        ff "${ENCODE_ARGS[@]}"
        ff "${HLS_ARGS[@]}"
        ff "${FMP4_ARGS[@]}"
        ff "${BYTERANGE_ARGS[@]}"
        head -c 16 /dev/urandom >aes/enc.key
        printf '../enc.key\n%s\n' "$d/aes/enc.key" >key.info
        ff "${AES_ARGS[@]}"
        rm -f key.info
        ff "${DASH_ARGS[@]}"
        python3 "$CHECK_PY" reference v720.mp4 ref >&2
    ) || { rm -rf -- "$d"; die "ffmpeg could not make the streams"; }
    rm -rf -- "$FIX"
    mv -- "$d" "$FIX"
}
if [[ -f $FIX/ref/ref.json && -f $FIX/dash/manifest.mpd ]]; then
    log "streams: ${FIX#"$REPO_ROOT"/} (cached)"
else
    log "streams: making ${FIX#"$REPO_ROOT"/} (3 variants of 60 s, 5 kinds; about a minute of CPU) ..."
    make_fixtures
fi
stream_path() {  # stream: its playlist or manifest under /streams/
    case $1 in dash) echo "dash/manifest.mpd" ;; *) echo "$1/master.m3u8" ;; esac
}
# ffmpeg's -map for the 720p video and its audio in the stream at url, as
# "video audio": the streams' indices as ffmpeg numbers them (HLS: one program
# per variant; DASH: the representations).  Run in the namespace.
ffmap_of() {  # url
    local map
    map=$(inns ffprobe -v error -show_entries program=program_id:stream=index,codec_type,width -of json "$1" \
        2>/dev/null | python3 -c '
import json, sys
info = json.load(sys.stdin)
groups = [p["streams"] for p in info.get("programs", []) if p.get("streams")] or [info.get("streams", [])]
for streams in groups:
    v = [x["index"] for x in streams if x.get("codec_type") == "video" and x.get("width") == 1280]
    a = [x["index"] for x in streams if x.get("codec_type") == "audio"]
    if v and a:
        print(v[0], a[0]); break
') || true
    [[ $map =~ ^[0-9]+\ [0-9]+$ ]] || die "ffprobe found no 1280x720 video with audio in $1"
    echo "$map"
}
stream_kind() {  # for the report
    case $1 in
        hls) echo "HLS master, 3 variants, MPEG-TS segments" ;;
        fmp4) echo "HLS fMP4 (EXT-X-MAP)" ;;
        byterange) echo "HLS single file with EXT-X-BYTERANGE" ;;
        aes) echo "HLS AES-128" ;;
        dash) echo "DASH, SegmentTemplate + SegmentTimeline, separate audio" ;;
    esac
}
