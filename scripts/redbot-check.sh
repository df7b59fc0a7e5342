#!/usr/bin/env bash
# HTTP as caches and players expect: REDbot (PyPI `redbot`, lint for HTTP) checks the same files
# on Debian's nginx in its default configuration (Benchmarks/nginx.conf.in, /fast/) and through
# `vfetch serve` with that nginx as the origin, on the host loopback. Each request (GET, HEAD, a
# range, an unsatisfiable range, If-Range, a failed If-Match, a file that is not media, the player
# page) is checked on both, with REDbot's own follow-up requests (If-None-Match, If-Modified-Since,
# a range, gzip).
# Fails (exit 1, naming them) when serve draws a note nginx does not, but for the ALLOWED notes
# below, which are about what serve rightly does differently. Exit 2: the check could not run.
#
# Usage: scripts/redbot-check.sh [-h|--help]
#
# vfetch is taken from $VFETCH, else <repo>/.build/debug/vfetch (make redbot builds it).
# Needs: bash >= 5, nginx, ffmpeg, python3 with redbot (installed by scripts/install-deps.sh redbot).
set -euo pipefail
export LC_ALL=C

# shellcheck source-path=SCRIPTDIR source=../Benchmarks/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../Benchmarks/lib.sh"

VFETCH_BIN=${VFETCH:-$REPO_ROOT/.build/debug/vfetch}
NOTES_PY="$REPO_ROOT/scripts/redbot_notes.py"
LIMIT=30   # seconds for REDbot on one request (its follow-ups included); a run takes about 3

# Notes serve may draw that nginx does not, each for a reason (REDbot's note ids).
declare -A ALLOWED=(
    # Every answer says `Content-Security-Policy: sandbox; default-src 'none'` (the player page:
    # its own script and the cache's media only): nothing read from an origin ever runs as a page
    # of serve's address, where the cache's API is. nginx's default configuration sends none.
    [CONTENT_SECURITY_POLICY]="serve sets a sandboxing Content-Security-Policy on every answer"
    # `X-Content-Type-Options: nosniff` on every answer, for the same reason: no browser reads a
    # cached file as HTML or script whatever its bytes. nginx's default configuration sends none.
    [CONTENT_TYPE_OPTIONS]="serve sends X-Content-Type-Options: nosniff on every answer"
    # The player page, its script and style are `Cache-Control: no-cache`: a browser asks again
    # each time (a 304 with their ETag while unchanged), so a new vfetch's page is used at once and
    # never a stale script with a new server. nginx leaves the freshness of its files to caches.
    [FRESHNESS_NO_CACHE]="serve's player page is revalidated on every use (Cache-Control: no-cache)"
    # The player and queue pages say `Referrer-Policy: no-referrer`: a request they make never tells another
    # site the page's address (the queue page's may have held the API token in its fragment before the
    # page took it off). REDbot counts it as GOOD; nginx's default configuration sends none.
    [REFERRER_POLICY_STRICT]="serve's pages send Referrer-Policy: no-referrer"
)

while (($#)); do
    case $1 in
        -h|--help) usage; exit 0 ;;
        *) die "unknown option: $1 (see --help)" ;;
    esac
done
((BASH_VERSINFO[0] >= 5)) || die "bash >= 5 needed"
[[ -x $VFETCH_BIN ]] || die "no vfetch binary at $VFETCH_BIN (swift build --product vfetch, or set VFETCH)"
if ! python3 -c 'import redbot' 2>/dev/null || ! PATH="$PATH:/usr/sbin:/sbin" command -v nginx >/dev/null \
    || ! command -v ffmpeg >/dev/null; then
    "$REPO_ROOT/scripts/install-deps.sh" redbot >&2
fi
find_nginx

make_tmp vfetch-redbot $((16 << 20))
MODE=loopback   # no network namespace: nothing here is timed, and serve must reach nginx
# The files: a short real MP4 (REDbot sniffs content), bytes that are not media, and serve's own
# player page as a static file, to compare serve's page with nginx serving the same bytes.
timeout 60 ffmpeg -nostdin -hide_banner -loglevel error -f lavfi -i testsrc=size=320x240:rate=25 -t 4 -pix_fmt yuv420p \
    -movflags +faststart "$WWW/clip.mp4" || die "ffmpeg could not make the sample video"
head -c $((256 << 10)) /dev/urandom >"$WWW/notes.bin"
NGINX_PORT=$(free_port 0)   # any free port of the host
start_nginx "$NGINX_PORT"
NGINX="http://127.0.0.1:$NGINX_PORT/fast"

"$VFETCH_BIN" serve --port 0 --cache-dir "$TMP/cache" >"$TMP/serve.out" 2>"$TMP/serve.err" &
SERVER_PID=$!
# its first line names its address
for ((i = 0; i < 100; i++)); do
    grep -q 'http://' "$TMP/serve.out" 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
SERVE=$(grep -o 'http://[^ ]*' "$TMP/serve.out" | head -n 1 || true)
[[ -n $SERVE ]] || die "vfetch serve did not start: $(tail -3 "$TMP/serve.err")"
timeout 10 curl -sf -o "$WWW/index.html" "$SERVE/" || die "serve's player page did not load"
chmod 0644 "$WWW"/*
media() { echo "$SERVE/media?url=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$NGINX/$1")"; }

ETAG=$(timeout 10 curl -sfI "$NGINX/clip.mp4" | sed -n 's/^etag: *//Ip' | tr -d '\r')
[[ -n $ETAG ]] || die "nginx sent no ETag for clip.mp4"

# name|path|method|request headers (|-separated); the first GET through serve is a cold cache.
SCENARIOS=(
    "GET media|clip.mp4|GET"
    "HEAD media|clip.mp4|HEAD"
    "GET media, a range|clip.mp4|GET|Range: bytes=100-1099"
    "HEAD media, a range|clip.mp4|HEAD|Range: bytes=100-1099"
    "GET media, an unsatisfiable range|clip.mp4|GET|Range: bytes=99999999-"
    "GET a range, If-Range current|clip.mp4|GET|Range: bytes=100-1099|If-Range: $ETAG"
    "GET a range, If-Range stale|clip.mp4|GET|Range: bytes=100-1099|If-Range: \"stale\""
    "GET a failed If-Match|clip.mp4|GET|If-Match: \"stale\""
    "GET not media|notes.bin|GET"
    "GET the player page|/|GET"
)

# In the background, so that a signal to this script is handled at once (cleanup kills MEASURE_PID).
notes() {  # file url method [header...]: REDbot's notes on that request into file, one a line
    local out=$1 rc=0
    shift
    timeout -k 5 "$LIMIT" python3 "$NOTES_PY" "$@" >"$out" &
    MEASURE_PID=$!
    wait "$MEASURE_PID" || rc=$?
    MEASURE_PID=""
    return "$rc"
}

log "REDbot $(python3 -c 'import redbot; print(redbot.__version__)'), $("$NGINX_BIN" -v 2>&1 | sed 's/.*: //'), serve at $SERVE"
failed=()
printf '%-34s %-60s %s\n' "request" "serve only (allowed)" "nginx only"
for scenario in "${SCENARIOS[@]}"; do
    IFS='|' read -r -a fields <<<"$scenario"
    name=${fields[0]} path=${fields[1]} method=${fields[2]}
    headers=("${fields[@]:3}")
    if [[ $path == / ]]; then
        nginx_url="$NGINX/" serve_url="$SERVE/"
    else
        nginx_url="$NGINX/$path" serve_url=$(media "$path")
    fi
    notes "$TMP/nginx.notes" "$nginx_url" "$method" "${headers[@]}" || die "REDbot failed on nginx ($name)"
    notes "$TMP/serve.notes" "$serve_url" "$method" "${headers[@]}" || die "REDbot failed on serve ($name)"
    cut -f1 "$TMP/nginx.notes" | sort -u >"$TMP/nginx.ids"
    cut -f1 "$TMP/serve.notes" | sort -u >"$TMP/serve.ids"
    serve_only=() allowed=()
    for id in $(comm -13 "$TMP/nginx.ids" "$TMP/serve.ids"); do
        if [[ -n ${ALLOWED[$id]:-} ]]; then allowed+=("$id"); else serve_only+=("$id"); fi
    done
    nginx_only=$(comm -23 "$TMP/nginx.ids" "$TMP/serve.ids" | paste -sd, -)
    shown=("${serve_only[@]}")
    ((${#allowed[@]})) && shown+=("(${allowed[*]})")
    printf '%-34s %-60s %s\n' "$name" "${shown[*]:--}" "${nginx_only:--}"
    for id in "${serve_only[@]}"; do
        failed+=("$name: $(awk -F'\t' -v id="$id" '$1 == id {print $1 " (" $2 "): " $3; exit}' "$TMP/serve.notes")")
    done
done

if ((${#failed[@]})); then
    log ""
    log "FAIL: serve draws notes nginx does not:"
    printf '  %s\n' "${failed[@]}" >&2
    exit 1
fi
log "OK: serve draws no note nginx does not (allowed: ${!ALLOWED[*]})"
