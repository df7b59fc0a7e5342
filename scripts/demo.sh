#!/usr/bin/env bash
# The demo: a sample video served by a throttled local origin (2 MiB/s per connection, as many CDNs
# limit), fetched once over one connection and once with vfetch's defaults, then compared.
set -euo pipefail
cd "$(dirname "$0")/.."

out=demo-out
mkdir -p "$out"
rm -f "$out"/one.mp4 "$out"/many.mp4 "$out"/*.part

echo "== building (release)"
swift build -c release --product vfetch >/dev/null
swift build -c release --product vfetch-origin >/dev/null
bin=$(swift build -c release --show-bin-path)

if [ ! -s "$out/sample.mp4" ]; then
  echo "== making a 20 s 720p sample video with ffmpeg"
  ffmpeg -hide_banner -loglevel error -y \
    -f lavfi -i testsrc2=size=1280x720:rate=30 -f lavfi -i sine=frequency=440:sample_rate=48000 \
    -t 20 -c:v libx264 -preset ultrafast -b:v 6M -c:a aac -b:a 128k -movflags +faststart \
    "$out/sample.mp4"
fi
size=$(stat -c %s "$out/sample.mp4")
expected=$(sha256sum "$out/sample.mp4" | cut -c1-64)

echo "== serving it at 2 MiB/s per connection"
"$bin/vfetch-origin" --port 0 --rate 2097152 "$out/sample.mp4" >"$out/origin.log" &
origin=$!
trap 'kill $origin 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q listening "$out/origin.log" && break; sleep 0.1; done
url="$(sed -n 's/^listening on //p' "$out/origin.log")/sample.mp4"

seconds() { python3 -c 'import sys,time; print(f"{time.time():.3f}")'; }

echo "== one connection: vfetch get -c 1"
start=$(seconds)
"$bin/vfetch" get "$url" -o "$out/one.mp4" -c 1
one=$(python3 -c "print($(seconds) - $start)")

echo "== vfetch get with its defaults"
start=$(seconds)
"$bin/vfetch" get "$url" -o "$out/many.mp4"
many=$(python3 -c "print($(seconds) - $start)")

for file in one many; do
  actual=$(sha256sum "$out/$file.mp4" | cut -c1-64)
  [ "$actual" = "$expected" ] || { echo "SHA-256 of $file.mp4 differs from the source" >&2; exit 1; }
done
duration=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$out/many.mp4")
python3 - "$size" "$one" "$many" "$duration" <<'PY'
import sys
size, one, many, duration = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
mib = size / 2**20
print(f"== {mib:.1f} MiB video ({duration:.1f} s), SHA-256 identical to the source both times")
print(f"   one connection: {one:5.2f} s  ({mib/one:6.1f} MiB/s)")
print(f"   vfetch:         {many:5.2f} s  ({mib/many:6.1f} MiB/s)  {one/many:.1f}x faster")
PY
