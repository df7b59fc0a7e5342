#!/usr/bin/env python3
"""The output check of Benchmarks/streams.sh (Python 3 stdlib, ffmpeg and ffprobe).

  streams_check.py reference MP4 DIR
      Writes DIR/ref-frames.md5 (one MD5 per decoded video frame) and
      DIR/ref.json (size, audio packets, A/V start offset) for the variant MP4
      the downloads must reproduce.
  streams_check.py check FILE --ref DIR --cache DIR --seconds S
      Checks one tool's output against that reference and prints one CSV
      fragment: status,frames_ok,frames,width,height,span_s,format_duration_s,
      av_offset_s,audio_packets.  The result is kept in the cache dir under the
      file's SHA-256, as repeated runs of a tool usually write the same bytes.

The check: the decoded video frames' MD5s (framemd5's last column: containers
differ in timestamps, not in pictures) equal the reference's, one for one;
the span from the first to the end of the last packet of the video and the
first audio stream is within DURATION_TOL of the stream's length; an audio
stream exists, has as many packets as the reference's (within
AUDIO_PACKETS_TOL) and starts within AV_TOL of where the reference's starts
relative to the video.  status is "ok" or the first thing that failed.
"""

import hashlib
import json
import os
import subprocess
import sys

DURATION_TOL = 0.2      # s, |span - the stream's length|
AV_TOL = 0.045          # s, |A/V start offset - the reference's| (about what a viewer notices first)
AUDIO_PACKETS_TOL = 2   # AAC frames (21.3 ms each at 48 kHz) a remuxer may drop at the ends
TIMEOUT = 300           # s, for one ffmpeg or ffprobe run

FIELDS = ("status", "frames_ok", "frames", "width", "height", "span_s", "format_duration_s", "av_offset_s",
          "audio_packets")


def run(cmd):
    """stdout of cmd, or None when it fails."""
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.decode("utf-8", "replace") if p.returncode == 0 else None


def frame_md5s(path):
    """The MD5 of every decoded frame of the first video stream, in output order."""
    out = run(["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-i", path, "-map", "0:v:0",
               "-fps_mode", "passthrough", "-f", "framemd5", "-"])
    if out is None:
        return None
    return [line.rsplit(",", 1)[-1].strip() for line in out.splitlines() if line and not line.startswith("#")]


def probe(path):
    """Streams and packet timing of a file: a dict, or None when ffprobe fails."""
    out = run(["ffprobe", "-v", "error", "-show_entries", "stream=index,codec_type,width,height:format=duration",
               "-of", "json", path])
    if out is None:
        return None
    info = json.loads(out)
    streams = info.get("streams", [])
    video = next((s for s in streams if s.get("codec_type") == "video"), None)
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    res = {"video": video, "audio": audio, "format_duration": fnum(info.get("format", {}).get("duration"))}
    want = {s["index"] for s in (video, audio) if s}
    first, end, count = {}, {}, {}
    pk = run(["ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts_time,duration_time",
              "-of", "csv=p=0", path]) or ""
    for line in pk.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or not parts[0].isdigit() or int(parts[0]) not in want:
            continue
        i, pts, dur = int(parts[0]), fnum(parts[1]), fnum(parts[2])
        if pts != pts:  # NaN: a packet without a timestamp
            continue
        dur = 0.0 if dur != dur else dur
        count[i] = count.get(i, 0) + 1
        first[i] = min(first.get(i, pts), pts)
        end[i] = max(end.get(i, pts + dur), pts + dur)
    res["span"] = (max(end.values()) - min(first.values())) if first else float("nan")
    res["video_start"] = first.get(video["index"]) if video else None
    res["audio_start"] = first.get(audio["index"]) if audio else None
    res["audio_packets"] = count.get(audio["index"], 0) if audio else 0
    return res


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def av_offset(p):
    if p["audio_start"] is None or p["video_start"] is None:
        return float("nan")
    return p["audio_start"] - p["video_start"]


def reference(mp4, outdir):
    md5s = frame_md5s(mp4)
    p = probe(mp4)
    if not md5s or p is None or p["audio"] is None or p["video"] is None:
        sys.exit(f"streams_check.py: cannot decode the reference {mp4}")
    with open(os.path.join(outdir, "ref-frames.md5"), "w", encoding="utf-8") as f:
        f.write("\n".join(md5s) + "\n")
    ref = {"frames": len(md5s), "width": p["video"].get("width"), "height": p["video"].get("height"),
           "audio_packets": p["audio_packets"], "av_offset": av_offset(p), "span": p["span"]}
    with open(os.path.join(outdir, "ref.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f)
    print(f"reference: {len(md5s)} frames {ref['width']}x{ref['height']}, {ref['audio_packets']} audio packets, "
          f"span {p['span']:.3f} s")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check(path, refdir, cachedir, seconds):
    with open(os.path.join(refdir, "ref.json"), encoding="utf-8") as f:
        ref = json.load(f)
    with open(os.path.join(refdir, "ref-frames.md5"), encoding="utf-8") as f:
        ref_md5s = f.read().split()
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return {"status": "no_output"}
    cached = os.path.join(cachedir, sha256(path) + ".json")
    if os.path.exists(cached):
        with open(cached, encoding="utf-8") as f:
            return json.load(f)
    r = {}
    md5s = frame_md5s(path)
    p = probe(path)
    if md5s is None or p is None or p["video"] is None:
        r["status"] = "undecodable"
    else:
        r["frames"] = len(md5s)
        r["frames_ok"] = int(md5s == ref_md5s)
        r["width"], r["height"] = p["video"].get("width"), p["video"].get("height")
        r["span_s"] = round(p["span"], 3)
        r["format_duration_s"] = round(p["format_duration"], 3)
        r["av_offset_s"] = round(av_offset(p), 3)
        r["audio_packets"] = p["audio_packets"]
        if not r["frames_ok"]:
            r["status"] = "frames_differ"
        elif not abs(p["span"] - seconds) <= DURATION_TOL:
            r["status"] = "duration"
        elif p["audio"] is None:
            r["status"] = "no_audio"
        elif abs(p["audio_packets"] - ref["audio_packets"]) > AUDIO_PACKETS_TOL:
            r["status"] = "audio_packets"
        elif not abs(av_offset(p) - ref["av_offset"]) <= AV_TOL:
            r["status"] = "av_sync"
        else:
            r["status"] = "ok"
    with open(cached, "w", encoding="utf-8") as f:
        json.dump(r, f)
    return r


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "reference":
        reference(a[1], a[2])
    elif len(a) == 8 and a[0] == "check" and a[2] == "--ref" and a[4] == "--cache" and a[6] == "--seconds":
        r = check(a[1], a[3], a[5], float(a[7]))
        print(",".join("" if r.get(k) is None else str(r.get(k)) for k in FIELDS))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
