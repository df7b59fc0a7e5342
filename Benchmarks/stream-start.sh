#!/usr/bin/env bash
# `vfetch get --stream` start benchmark: how soon a file with its `moov` at the
# end is playable from 0 while it downloads from a slow origin.
#
# The origin: a local nginx (Debian's package in its default configuration,
# nginx.conf.in) at 32 KiB/s per connection (`limit_rate 32k`, /start/), in a
# throw-away network namespace as root (otherwise the host loopback).  The file:
# ../shared/media/bbb-480p-30s.mp4 (Big Buck Bunny, 30 s 480p, moov at the end)
# when it is there, else a 30 s 480p H.264/AAC clip made once with ffmpeg
# (no +faststart, so moov is written last).
#
# Per run: `vfetch get URL --stream --json`; from its progress lines, the
# seconds until `playable_to` first says the file plays from 0, how much plays
# from 0 at 3 s, and the time to the whole file; then its SHA-256 against the
# source.  Target (issue 17): playable from 0 after 3 s.  With VFETCH_BASE set
# to another vfetch binary, each rep runs it too, alternating which goes first.
#
# Usage: Benchmarks/stream-start.sh [options]
#   --quick              1 rep (default 5)
#   --reps N             repetitions
#   --no-netns           force the host loopback
#   -h, --help           this text
#
# vfetch is taken from $VFETCH, else <repo>/.build/release/vfetch.
# Results: Benchmarks/results/stream-start-<date>.md and .csv (one line per run).
# Needs: bash >= 5, nginx >= 1.17, python3, ffmpeg (without the sample), coreutils.
set -euo pipefail
export LC_ALL=C

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DEFAULT_REPS=5
while (($#)); do
    common_option "$@"   # --quick, --reps, --no-netns, --help
    if ((NARGS)); then shift "$NARGS"; continue; fi
    usage >&2; die "unknown argument: $1"
done
check_common_options
find_nginx
need_vfetch
BINARIES=("$VFETCH_BIN")
[[ -n ${VFETCH_BASE:-} ]] && { [[ -x $VFETCH_BASE ]] || die "VFETCH_BASE is not executable"; BINARIES+=("$VFETCH_BASE"); }
NOTES=()

make_tmp vfstart $((64 * 1048576))
SAMPLE="$REPO_ROOT/../shared/media/bbb-480p-30s.mp4"
if [[ -f $SAMPLE ]]; then
    cp -- "$SAMPLE" "$WWW/clip.mp4"
    CLIP="bbb-480p-30s.mp4 (the shared sample)"
else
    command -v ffmpeg >/dev/null || die "no ../shared sample and no ffmpeg to make a clip"
    ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i "testsrc2=size=854x480:rate=24" -f lavfi \
        -i "sine=frequency=440:sample_rate=48000" -t 30 -c:v libx264 -preset veryfast -b:v 1M -c:a aac \
        -f mp4 "$WWW/clip.mp4" </dev/null || die "ffmpeg could not make the clip"
    CLIP="a 30 s 480p clip made with ffmpeg (the shared sample is absent)"
fi
chmod 0644 "$WWW/clip.mp4"
SHA=$(sha256sum "$WWW/clip.mp4" | awk '{print $1}')
setup_netns vfstart ip
note_loopback
PORT=$(free_port 18080)
start_nginx "$PORT"
URL="http://127.0.0.1:$PORT/start/clip.mp4"

results_base stream-start
CSV="$BASE.csv"
MD="$BASE.md"
RESULT_FILES=("$CSV")
echo "rep,binary,first_playable_s,playable_at_3s,total_s,sha_ok" >"$CSV"

log "== stream-start: $CLIP at 32 KiB/s per connection ($MODE), $REPS reps"
for ((rep = 1; rep <= REPS; rep++)); do
    order=("${BINARIES[@]}")
    ((rep % 2 == 0 && ${#order[@]} == 2)) && order=("${BINARIES[1]}" "${BINARIES[0]}")
    for bin in "${order[@]}"; do
        clean_out
        # A fresh URL per run: nothing of an earlier run is reused.
        "${INNS[@]}" timeout -k 5 300 "$bin" get "$URL?rep=$rep" -o "$OUT/out.mp4" --stream --json </dev/null \
            >"$TMP/run.json" 2>"$TMP/run.err" || die "vfetch failed: $(head -c 300 "$TMP/run.err")"
        ok=no; [[ $(sha256sum "$OUT/out.mp4" | awk '{print $1}') == "$SHA" ]] && ok=yes
        line=$(python3 - "$TMP/run.json" <<'EOF'
import json, sys
first = at3 = None; total = 0.0
for raw in open(sys.argv[1]):
    event = json.loads(raw)
    if event.get("event") != "progress":
        continue
    total = event["seconds"]
    playable = event.get("playable_to")
    if playable and first is None:
        first = event["seconds"]
    if event["seconds"] <= 3:
        at3 = playable or 0
print(f"{'' if first is None else f'{first:.2f}'},{0 if at3 is None else at3:.2f},{total:.2f}")
EOF
)
        which=new; [[ $bin == "${VFETCH_BASE:-}" ]] && which=base
        echo "$rep,$which,$line,$ok" >>"$CSV"
        log "   rep $rep $which: first playable, playable at 3 s, total: $line  sha $ok"
    done
done

python3 - "$CSV" "$MD" "$CLIP" "$MODE" "$(repo_state)" "$FILES_FS" <<'EOF'
import csv, statistics, sys
path, md, clip, mode, repo, files = sys.argv[1:]
rows = list(csv.DictReader(open(path)))
out = ["# `get --stream` start (`Benchmarks/stream-start.sh`)", "",
       f"- vfetch: {repo}; origin: nginx `/start/` (32 KiB/s per connection), "
       + ("a network namespace" if mode == "netns" else "the host loopback"),
       f"- file: {clip}", f"- files (the origin's and vfetch's output): {files}", "",
       "| binary | runs | first playable from 0, s (median) | playable from 0 at 3 s, s (median) | whole file, s (median) | SHA-256 equal |",
       "|---|---:|---:|---:|---:|---|"]
for which in ("new", "base"):
    runs = [r for r in rows if r["binary"] == which]
    if not runs:
        continue
    first = [float(r["first_playable_s"]) for r in runs if r["first_playable_s"]]
    med = lambda xs: f"{statistics.median(xs):.2f}" if xs else "never"
    out.append(f"| {which} | {len(runs)} | {med(first) if len(first) == len(runs) else 'never in ' + str(len(runs) - len(first))} | "
               f"{med([float(r['playable_at_3s']) for r in runs])} | {med([float(r['total_s']) for r in runs])} | "
               f"{all(r['sha_ok'] == 'yes' for r in runs)} |")
out += ["", "Target (issue 17): playable from 0 after 3 s."]
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOF
log "results: ${MD#"$REPO_ROOT"/}  (raw runs: ${CSV#"$REPO_ROOT"/})"
! grep -q ',no$' "$CSV" || { log "stream-start.sh: FAILED: a download's SHA-256 differs from the source's"; exit 1; }
