#!/usr/bin/env bash
# Builds and runs the packages in Examples/ (each depends on vfetch by path and uses only its public API)
# against the test origin on 127.0.0.1, and checks the frames they got against the source's:
#   StreamToMP4       an HLS stream saved as one MP4;
#   PlayThroughCache  ffmpeg decoding a file through the embedded player cache's proxy URL.
set -euo pipefail
cd "$(dirname "$0")/.."

work=.build/examples-run  # on disk, as users' files are
rm -rf "$work" && mkdir -p "$work"
swift build --product vfetch-origin >/dev/null
origin_bin="$(swift build --show-bin-path)/vfetch-origin"

echo "== making a 6 s clip and its HLS cut with ffmpeg"
ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=25 -f lavfi -i sine=frequency=440 \
  -t 6 -c:v libx264 -preset ultrafast -g 50 -c:a aac "$work/clip.mp4"
mkdir -p "$work/hls"
ffmpeg -hide_banner -loglevel error -y -i "$work/clip.mp4" -c copy -f hls -hls_time 2 -hls_playlist_type vod \
  -hls_segment_filename "$work/hls/seg%d.ts" "$work/hls/index.m3u8"

"$origin_bin" --port 0 --rate 1048576 "$work/clip.mp4" "$work/hls" >"$work/origin.log" &
origin=$!
trap 'kill $origin 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q listening "$work/origin.log" && break; sleep 0.1; done
base=$(sed -n 's/^listening on //p' "$work/origin.log")

# The MD5 of every decoded video frame, in order (timestamps left out: a remux may shift them).
frames() { ffmpeg -v error -i "$1" -map 0:v -f framemd5 - | grep -v '^#' | awk -F, '{print $NF}'; }
frames "$work/clip.mp4" >"$work/expected.txt"
[ -s "$work/expected.txt" ] || { echo "examples: no frames in the source" >&2; exit 1; }

for example in StreamToMP4 PlayThroughCache; do
  echo "== building Examples/$example"
  swift build --package-path "Examples/$example" --scratch-path .build/examples >/dev/null
done
bin=$(swift build --package-path Examples/StreamToMP4 --scratch-path .build/examples --show-bin-path)

echo "== StreamToMP4: $base/hls/index.m3u8"
"$bin/StreamToMP4" "$base/hls/index.m3u8" "$work/stream.mp4" >"$work/stream.log"
grep -q '"event":"done"' "$work/stream.log" || { echo "examples: StreamToMP4 printed no done event" >&2; exit 1; }
frames "$work/stream.mp4" >"$work/stream.txt"
cmp -s "$work/expected.txt" "$work/stream.txt" || { echo "examples: StreamToMP4's frames differ from the source's" >&2; exit 1; }
echo "   $(wc -l <"$work/stream.txt") frames, each equal to the source's"

echo "== PlayThroughCache: ffmpeg reads $base/clip.mp4 through the cache"
"$bin/PlayThroughCache" "$work/cache" "$base/clip.mp4" | grep -v '^#' | awk -F, '{print $NF}' >"$work/played.txt"
cmp -s "$work/expected.txt" "$work/played.txt" || { echo "examples: the frames played through the cache differ" >&2; exit 1; }
echo "   $(wc -l <"$work/played.txt") frames, each equal to the source's"
