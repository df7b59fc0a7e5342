#!/usr/bin/env python3
"""Segmented streams in a real browser through `vfetch serve`: headless Chromium (Debian's
`chromium`, driven by Playwright) loads a page from a second local origin whose JavaScript player
reads serve's /media?url=<playlist>, which serve rewrites so that every segment comes through it.

  - hls.js plays an HLS master playlist of 3 variants (MPEG-TS segments, audio muxed in);
  - video.js (its http-streaming) plays a DASH MPD with separate video and audio adaptation sets
    (fMP4, SegmentTemplate with a SegmentTimeline): no PyPI or Debian package found ships dash.js.

For each, printed as `ok:` or `FAIL:`, then `N passed, N failed`: the page plays (readyState
HAVE_ENOUGH_DATA, currentTime passes 3 s), a seek plays on from there with the top variant's
picture and decoded audio, every request went to serve and none straight to the origin; then the
origin and serve are stopped, a fresh serve starts on the same cache directory, and a new page
plays the same parts again (from the start, and after the same seek) from serve's cache alone.

The players come from PyPI packages that ship them (npm is out of reach), fetched and checked by
`scripts/install-deps.sh browser` into the folder given as --players (see that script).

Usage: streams.py --bin DIR --players DIR
Exit 0 only when every check passes; 1 when one fails; 2 when the test cannot run. The whole run is
bounded (--timeout, default 90 s), and every process it starts and its temporary folder are removed
on every path.
"""

import argparse
import http.server
import os
import shutil
import subprocess
import sys
import threading
import urllib.parse

from playback import HAVE_ENOUGH_DATA, CannotRun, Timeout, run_bounded, state

DURATION = 20  # seconds of each stream
SEEK_TO = 12  # seconds: the seek, in the first play and again offline
VARIANTS = [(640, 360, "1200k"), (426, 240, "600k"), (256, 144, "250k")]  # HLS master's order
# The player scripts in --players, each the UMD build exposing its global.
PLAYERS = {"hls": "hls.js", "dash": "video.min.js"}

# The page of the second origin: ?player=hls|dash plays ?src= with that player script. hls.js
# stays on the master's top variant, so the parts watched offline are those fetched before; the
# variants it read from the master are window.levels. A player's fatal error is window.playerError.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>vfetch streams test</title></head>
<body><video id="v" muted playsinline></video>
<script src="/players/{script}"></script>
<script>
const params = new URLSearchParams(location.search);
const video = document.getElementById("v");
const src = params.get("src");
if (params.get("player") === "hls") {{
  const hls = new Hls();
  hls.on(Hls.Events.MANIFEST_PARSED, (_, data) => {{
    window.levels = data.levels.map(l => l.width + "x" + l.height);
    hls.currentLevel = data.levels.length - 1;  // hls.js orders them by bitrate
    video.play().catch(() => {{}});
  }});
  hls.on(Hls.Events.ERROR, (_, data) => {{ if (data.fatal) window.playerError = data.type + ": " + data.details; }});
  hls.loadSource(src);
  hls.attachMedia(video);
}} else {{
  const player = videojs(video);
  player.on("error", () => {{ const e = player.error(); window.playerError = e ? e.code + ": " + e.message : "error"; }});
  player.src({{src: src, type: "application/dash+xml"}});
  player.play();
}}
</script></body></html>
"""


def page_handler(players):
    class PageHandler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            parts = urllib.parse.urlsplit(self.path)
            if parts.path == "/page.html":
                player = urllib.parse.parse_qs(parts.query).get("player", ["hls"])[0]
                body, kind = PAGE.format(script=PLAYERS.get(player, "none")).encode(), "text/html; charset=utf-8"
            elif parts.path.startswith("/players/") and parts.path[len("/players/"):] in PLAYERS.values():
                with open(os.path.join(players, parts.path[len("/players/"):]), "rb") as file:
                    body, kind = file.read(), "text/javascript; charset=utf-8"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return PageHandler


def make_streams(folder):
    """A 20 s HLS master of 3 variants (MPEG-TS, 2 s segments) and a 20 s DASH MPD with separate
    video and audio (fMP4, 2 s segments), H.264 and AAC with a keyframe every segment."""
    sources = ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i",
               "sine=frequency=440:sample_rate=48000", "-t", str(DURATION)]
    video = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "60", "-keyint_min", "60",
             "-sc_threshold", "0"]
    audio = ["-c:a", "aac", "-b:a", "96k", "-ac", "2"]
    graph = f"[0:v]split={len(VARIANTS)}" + "".join(f"[in{i}]" for i in range(len(VARIANTS)))
    maps, rates = [], []
    for index, (width, height, rate) in enumerate(VARIANTS):
        graph += f";[in{index}]scale={width}:{height}[v{index}]"
        maps += ["-map", f"[v{index}]", "-map", "1:a"]
        rates += [f"-b:v:{index}", rate]
    hls, dash = os.path.join(folder, "hls"), os.path.join(folder, "dash")
    os.makedirs(hls)
    os.makedirs(dash)
    runs = [
        [*sources, "-filter_complex", graph, *maps, *video, *rates, *audio, "-f", "hls", "-hls_time", "2",
         "-hls_playlist_type", "vod", "-hls_segment_filename", os.path.join(hls, "v%v", "segment%d.ts"),
         "-master_pl_name", "master.m3u8",
         "-var_stream_map", " ".join(f"v:{i},a:{i}" for i in range(len(VARIANTS))),
         os.path.join(hls, "v%v", "index.m3u8")],
        [*sources, "-map", "0:v", "-map", "1:a", *video, "-b:v", "1000k", *audio, "-f", "dash", "-seg_duration", "2",
         "-use_template", "1", "-use_timeline", "1", "-adaptation_sets", "id=0,streams=v id=1,streams=a",
         os.path.join(dash, "manifest.mpd")],
    ]
    for run in runs:
        result = subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *run],
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise CannotRun(f"ffmpeg could not make the streams: {result.stderr.strip()}")
    return hls, dash


def wait_for(page, condition, seconds, what):
    """Polls `condition` (a JS expression on `v`, the video) until true; raises Timeout naming what
    was awaited and the last state. A video or player error ends the wait at once."""
    expression = ('() => { const v = document.querySelector("video"); '
                  f'return !!v && (v.error !== null || window.playerError !== undefined || ({condition})); }}')
    try:
        page.wait_for_function(expression, timeout=seconds * 1000, polling=100)
    except Exception as error:  # Playwright's TimeoutError, or the page closing
        raise Timeout(f"{what}: not within {seconds} s (video: {last_state(page)}; {type(error).__name__})")
    s = last_state(page)
    if s["error"] is not None or s.get("playerError"):
        raise Timeout(f"{what}: the player failed instead (video: {s})")
    return s


def last_state(page):
    try:
        s = state(page)
        s["playerError"] = page.evaluate("() => window.playerError || null")
        return s
    except Exception:
        return "gone"


class Traffic:
    """The page's requests: those to serve (status of each answer), those anywhere else but the
    page's own origin, and the browser's failures."""

    def __init__(self, page, serve_url, page_origin):
        self.answers, self.elsewhere, self.failures = [], [], []

        def on_request(request):
            # blob: URLs are the players' own MediaSource objects, not fetches.
            if request.url.startswith("http") and not request.url.startswith((serve_url, page_origin)):
                self.elsewhere.append(request.url)

        def on_response(response):
            if response.url.startswith(serve_url):
                self.answers.append((response.status, response.url, response.headers.get("access-control-allow-origin")))

        page.on("request", on_request)
        page.on("response", on_response)
        page.on("requestfailed", lambda r: self.failures.append(f"{r.url}: {r.failure}"))

    def problems(self):
        bad = [f"{status} {urllib.parse.unquote(url)}" for status, url, _ in self.answers if status >= 400]
        bad += [f"no Access-Control-Allow-Origin on {urllib.parse.unquote(url)}" for _, url, cors in self.answers if not cors]
        bad += [f"request past serve: {url}" for url in self.elsewhere]
        return bad + self.failures


def play(browser, checks, name, page_url, serve_url, page_origin, offline):
    """One page: plays from the start, then seeks to SEEK_TO and plays on."""
    when = "offline, fresh serve" if offline else "through serve"
    page = browser.new_page()
    traffic = Traffic(page, serve_url, page_origin)
    try:
        page.goto(page_url)
        s = wait_for(page, f"v.readyState >= {HAVE_ENOUGH_DATA} && v.currentTime > 3", 25,
                     f"{name} {when}: HAVE_ENOUGH_DATA and currentTime past 3 s")
        levels = page.evaluate("() => window.levels || null")
        checks.ok(f"{name} {when}: plays, readyState {s['readyState']}, currentTime {s['currentTime']:.2f} s, "
                  f"duration {s['duration']:.1f} s" + (f", variants {levels}" if levels else ""))
        if levels is not None and len(levels) != len(VARIANTS):
            checks.fail(f"{name} {when}: the master has {len(levels)} variants, not {len(VARIANTS)}: {levels}")
        page.evaluate(f"""() => {{ const v = document.querySelector("video");
            v.addEventListener("seeked", () => {{ window.seekedAt = v.currentTime; }}, {{once: true}});
            v.currentTime = {SEEK_TO}; v.play().catch(() => {{}}); }}""")
        wait_for(page, "window.seekedAt !== undefined", 15, f"{name} {when}: a seek to {SEEK_TO} s completes")
        seeked_at = page.evaluate("() => window.seekedAt")
        if abs(seeked_at - SEEK_TO) > 0.5:
            raise Timeout(f"{name} {when}: a seek to {SEEK_TO} s landed at {seeked_at:.2f} s")
        s = wait_for(page, f"v.currentTime > {seeked_at + 1.5}", 15,
                     f"{name} {when}: after the seek to {SEEK_TO} s, currentTime passes {seeked_at + 1.5:.1f} s")
        size = page.evaluate('() => { const v = document.querySelector("video"); return [v.videoWidth, v.videoHeight]; }')
        # Chromium's count of audio bytes decoded: the sound (DASH: its own adaptation set) played too.
        audio = page.evaluate('() => document.querySelector("video").webkitAudioDecodedByteCount')
        checks.ok(f"{name} {when}: seek to {SEEK_TO} s (seeked at {seeked_at:.2f} s) plays on, "
                  f"currentTime {s['currentTime']:.2f} s, picture {size[0]}x{size[1]}, {audio} audio bytes decoded")
        if not audio:
            checks.fail(f"{name} {when}: no audio decoded")
        if tuple(size) != VARIANTS[0][:2]:
            checks.fail(f"{name} {when}: the picture is {size[0]}x{size[1]}, not the top variant's "
                        f"{VARIANTS[0][0]}x{VARIANTS[0][1]}")
        problems = traffic.problems()
        if problems:
            checks.fail(f"{name} {when}: {len(problems)} bad requests: {problems[:5]}")
        else:
            statuses = sorted({status for status, _, _ in traffic.answers})
            checks.ok(f"{name} {when}: all {len(traffic.answers)} requests answered by serve "
                      f"(statuses {statuses}, each with Access-Control-Allow-Origin), none past it")
    except Timeout as error:
        checks.fail(str(error))
        problems = traffic.problems()
        if problems:
            print(f"  bad requests: {problems[:8]}", flush=True)
    finally:
        page.close()


def run(args, folder, processes, checks):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise CannotRun("Python's playwright is missing: scripts/install-deps.sh browser installs it")
    for tool in ("ffmpeg", args.chromium):
        if shutil.which(tool) is None:
            raise CannotRun(f"{tool} not found: scripts/install-deps.sh browser installs it")
    vfetch, origin = os.path.join(args.bin, "vfetch"), os.path.join(args.bin, "vfetch-origin")
    for binary in (vfetch, origin):
        if not os.access(binary, os.X_OK):
            raise CannotRun(f"{binary} not found: swift build --product {os.path.basename(binary)}")
    for script in PLAYERS.values():
        if not os.path.isfile(os.path.join(args.players, script)):
            raise CannotRun(f"{script} not in {args.players}: scripts/install-deps.sh browser fetches it")

    hls, dash = make_streams(folder)
    print(f"streams: HLS master of {len(VARIANTS)} variants and DASH with separate audio, {DURATION} s each", flush=True)

    page_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), page_handler(args.players))
    page_server.daemon_threads = True
    threading.Thread(target=page_server.serve_forever, daemon=True).start()
    page_origin = f"http://127.0.0.1:{page_server.server_address[1]}"
    cache = os.path.join(folder, "cache")

    def serve(name):
        line = processes.start(name, [vfetch, "serve", "--port", "0", "--cache-dir", cache,
                                      "--allow-origin", page_origin], "vfetch serve: ")
        return line.split(" ", 1)[0]

    try:
        with sync_playwright() as playwright:
            launch_args = ["--autoplay-policy=no-user-gesture-required"]
            if os.geteuid() == 0:
                launch_args.append("--no-sandbox")  # Chromium's sandbox refuses to run as root
            browser = playwright.chromium.launch(executable_path=shutil.which(args.chromium), args=launch_args,
                                                 timeout=30_000)
            print(f"browser: Chromium {browser.version}", flush=True)

            # Throttled per connection, so serve is still fetching segments as playback starts.
            origin_url = processes.start("origin", [origin, "--port", "0", "--rate", str(args.rate), hls, dash],
                                         "listening on ").rstrip("/")
            streams = [("hls.js", "hls", f"{origin_url}/hls/master.m3u8"),
                       ("DASH", "dash", f"{origin_url}/dash/manifest.mpd")]

            def page_for(serve_url, player, url):
                stream = f"{serve_url}/media?url={urllib.parse.quote(url, safe='')}"
                return f"{page_origin}/page.html?player={player}&src={urllib.parse.quote(stream, safe='')}"

            online = serve("serve")
            print(f"page origin {page_origin}; media origin {origin_url}; serve {online}", flush=True)
            for name, player, url in streams:
                play(browser, checks, name, page_for(online, player, url), online, page_origin, offline=False)

            processes.stop("origin")
            processes.stop("serve")
            offline = serve("serve-offline")
            print(f"origin and serve stopped; fresh serve {offline} on the same cache", flush=True)
            for name, player, url in streams:
                play(browser, checks, name, page_for(offline, player, url), offline, page_origin, offline=True)
            browser.close()
    finally:
        page_server.shutdown()
        page_server.server_close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="folder holding vfetch and vfetch-origin")
    parser.add_argument("--players", required=True, help="folder holding the player scripts (install-deps.sh browser)")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the browser Playwright drives")
    parser.add_argument("--timeout", type=float, default=90, help="bound of the whole run, seconds")
    parser.add_argument("--rate", type=int, default=512 * 1024, help="media origin's bytes/s per connection")
    args = parser.parse_args()

    sys.exit(run_bounded(args, "streams browser test", "vfetch-streams-", run))


if __name__ == "__main__":
    main()
