#!/usr/bin/env python3
"""A real browser plays through `vfetch serve`: headless Chromium (Debian's `chromium`, driven by
Playwright) loads a page from a second local origin whose <video crossorigin> reads serve's /media.

Checks, each printed as `ok:` or `FAIL:`, then `N passed, N failed`:
  - with `--allow-origin PAGE-ORIGIN`: readyState reaches HAVE_ENOUGH_DATA, currentTime passes 5 s,
    a seek to the middle plays on from there;
  - the same page against a serve without `--allow-origin` is refused, with <video crossorigin>
    (CORS mode) and without it (no-cors: serve's rule that web pages never reach loopback);
  - serve's own player page at /?url=... plays (same origin, no flag needed).

Usage: playback.py --bin DIR   (DIR holds `vfetch` and `vfetch-origin`: `swift build --show-bin-path`)
Exit 0 only when every check passes; 1 when one fails; 2 when the test cannot run. The whole run is
bounded (--timeout, default 90 s), and every process it starts and its temporary folder are removed
on every path.
"""

import argparse
import http.server
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

DURATION = 20  # seconds of fixture video
HAVE_METADATA, HAVE_ENOUGH_DATA = 1, 4


class Timeout(Exception):
    """A check that did not come true in its time."""


class Stopped(BaseException):
    """The whole run's bound passed, or a signal came: nothing more runs but the cleanup.
    (A BaseException, so that no `except Exception` on the way takes it for a check's failure.)"""


class CannotRun(Exception):
    pass


# The page of the second origin: plays ?src= in a <video>, with crossorigin="anonymous" unless ?cors=0.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>vfetch browser test</title></head>
<body><video id="v" muted playsinline autoplay></video>
<script>
const params = new URLSearchParams(location.search);
const video = document.getElementById("v");
if (params.get("cors") !== "0") video.crossOrigin = "anonymous";
video.src = params.get("src");
video.play().catch(() => {});
</script></body></html>
"""


class PageHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if urllib.parse.urlsplit(self.path).path != "/page.html":
            self.send_error(404)
            return
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Processes:
    """The processes this test starts, each in a session of its own, so each is ended with its children."""

    def __init__(self, folder):
        self.folder = folder
        self.running = []
        self.started = []  # every name, stopped or not, for the logs

    def start(self, name, argv, first_line_prefix, wait=20):
        """Starts argv, returns the rest of its first stdout line that starts with the prefix (without
        a prefix, "" at once: the caller waits for it as it must)."""
        log = open(os.path.join(self.folder, name + ".stderr"), "wb")
        output = subprocess.DEVNULL if first_line_prefix is None else subprocess.PIPE
        process = subprocess.Popen(argv, stdout=output, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.running.append((name, process))
        self.started.append(name)
        if first_line_prefix is None:
            return ""
        lines = queue.Queue()

        def read():
            for raw in process.stdout:
                lines.put(raw.decode(errors="replace").rstrip("\n"))
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + wait
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise CannotRun(f"{name} printed no '{first_line_prefix}' line in {wait} s{self.stderr(name)}")
            if line is None:
                raise CannotRun(f"{name} exited ({process.wait()}) before listening{self.stderr(name)}")
            if line.startswith(first_line_prefix):
                return line[len(first_line_prefix):]

    def stderr(self, name):
        try:
            with open(os.path.join(self.folder, name + ".stderr"), errors="replace") as file:
                text = file.read().strip()
        except OSError:
            return ""
        return f"; its stderr:\n{text[-2000:]}" if text else ""

    def stop(self, name):
        """Ends the process started as `name` (and its children), if it still runs."""
        self._end([entry for entry in self.running if entry[0] == name])
        self.running = [entry for entry in self.running if entry[0] != name]

    def stop_all(self):
        self._end(self.running)
        self.running = []

    @staticmethod
    def _end(entries):
        for _, process in entries:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for _, process in entries:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait()


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self, message):
        self.passed += 1
        print(f"ok: {message}", flush=True)

    def fail(self, message):
        self.failed += 1
        print(f"FAIL: {message}", flush=True)


def make_fixture(folder, container):
    """A 20 s 640x360 test video with sound. MP4 keeps its moov at the end (no +faststart), the case
    where a player must read the file's tail before it can start."""
    video = ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i",
             "sine=frequency=440:sample_rate=48000", "-t", str(DURATION)]
    if container == "mp4":
        path = os.path.join(folder, "fixture.mp4")
        codecs = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-b:v", "1500k",
                  "-g", "30", "-c:a", "aac", "-b:a", "96k"]
    else:
        path = os.path.join(folder, "fixture.webm")
        codecs = ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "1500k",
                  "-g", "30", "-c:a", "libopus", "-b:a", "96k"]
    result = subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *video, *codecs, path],
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise CannotRun(f"ffmpeg could not make the fixture: {result.stderr.strip()}")
    return path


def state(page):
    return page.evaluate("""() => { const v = document.querySelector("video");
        return {readyState: v.readyState, currentTime: v.currentTime, duration: v.duration, paused: v.paused,
                error: v.error ? (v.error.code + " " + v.error.message) : null}; }""")


def wait_for(page, condition, seconds, what, error_ends=True):
    """Polls `condition` (a JS expression on `v`, the video) until true; returns the state, or raises
    Timeout naming what was awaited and the last state. A video error ends the wait at once, unless
    error_ends is False (the condition then says what to do with it)."""
    stop = "v.error !== null || " if error_ends else ""
    expression = f'() => {{ const v = document.querySelector("video"); return !!v && ({stop}({condition})); }}'
    try:
        page.wait_for_function(expression, timeout=seconds * 1000, polling=100)
    except Exception as error:  # Playwright's TimeoutError, or the page closing
        try:
            last = state(page)
        except Exception:
            last = "gone"
        raise Timeout(f"{what}: not within {seconds} s (video: {last}; {type(error).__name__})")
    s = state(page)
    if error_ends and s["error"] is not None:
        raise Timeout(f"{what}: the video failed instead (video: {s})")
    return s


def responses_of(page, prefix):
    """Records the responses (status, headers) and the browser's failures of requests to prefix."""
    seen, failures = [], []
    page.on("response", lambda r: seen.append((r.status, r.headers)) if r.url.startswith(prefix) else None)
    page.on("requestfailed", lambda r: failures.append(r.failure) if r.url.startswith(prefix) else None)
    return seen, failures


def allowed_page(browser, checks, page_url, serve_url):
    """The page of the second origin plays through a serve that allows it."""
    page = browser.new_page()
    seen, _ = responses_of(page, serve_url)
    try:
        page.goto(page_url)
        s = wait_for(page, f"v.readyState >= {HAVE_ENOUGH_DATA}", 20, "allowed origin: readyState reaches HAVE_ENOUGH_DATA")
        checks.ok(f"allowed origin: readyState {s['readyState']} (HAVE_ENOUGH_DATA), duration {s['duration']:.1f} s")
        cors = [h.get("access-control-allow-origin") for _, h in seen]
        statuses = sorted({status for status, _ in seen})
        if cors and all(cors):
            checks.ok(f"allowed origin: every /media response names the page's origin ({cors[0]}), statuses {statuses}")
        else:
            checks.fail(f"allowed origin: /media responses without Access-Control-Allow-Origin: {seen}")
        s = wait_for(page, "v.currentTime > 5", 15, "allowed origin: currentTime passes 5 s")
        checks.ok(f"allowed origin: plays, currentTime {s['currentTime']:.2f} s")
        middle = DURATION / 2
        page.evaluate(f"""() => {{ const v = document.querySelector("video");
            v.addEventListener("seeked", () => {{ window.seekedAt = v.currentTime; }}, {{once: true}});
            v.currentTime = {middle}; v.play().catch(() => {{}}); }}""")
        wait_for(page, "window.seekedAt !== undefined", 10, f"allowed origin: a seek to {middle:.0f} s completes")
        seeked_at = page.evaluate("() => window.seekedAt")
        if abs(seeked_at - middle) > 0.5:
            raise Timeout(f"allowed origin: a seek to {middle:.0f} s landed at {seeked_at:.2f} s")
        s = wait_for(page, f"v.currentTime > {seeked_at + 1.5}", 6,
                     f"allowed origin: after the seek to {middle:.0f} s, currentTime passes {seeked_at + 1.5:.1f} s")
        checks.ok(f"allowed origin: seek to {middle:.0f} s (seeked at {seeked_at:.2f} s) plays on, currentTime {s['currentTime']:.2f} s")
    except Timeout as error:
        checks.fail(str(error))
    finally:
        page.close()


def refused_page(browser, checks, page_url, serve_url, mode):
    """The same page against a serve that does not allow its origin: the video never loads."""
    page = browser.new_page()
    seen, failures = responses_of(page, serve_url)
    try:
        page.goto(page_url)
        s = wait_for(page, "v.error !== null || v.readyState >= 1", 10, f"refused ({mode}): video errors",
                     error_ends=False)
        if s["error"] is not None and s["readyState"] < HAVE_METADATA:
            checks.ok(f"refused ({mode}): video error '{s['error']}', readyState {s['readyState']}, "
                      f"the browser's verdict {sorted(set(failures))}")
        else:
            checks.fail(f"refused ({mode}): the video loaded (video: {s}; serve answered {[st for st, _ in seen]})")
    except Timeout as error:
        checks.fail(str(error))
    finally:
        page.close()


def own_page(browser, checks, serve_url, media_url):
    """serve's own player page at / plays ?url= (same origin: no --allow-origin needed)."""
    page = browser.new_page()
    try:
        page.goto(f"{serve_url}/?url={urllib.parse.quote(media_url, safe='')}")
        s = wait_for(page, "v.currentTime > 2", 15, "serve's page /?url=: currentTime passes 2 s")
        checks.ok(f"serve's page /?url=: plays, readyState {s['readyState']}, currentTime {s['currentTime']:.2f} s")
    except Timeout as error:
        checks.fail(str(error))
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

    # The page's origin: a second local HTTP server, on a port of its own.
    page_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PageHandler)
    page_server.daemon_threads = True
    threading.Thread(target=page_server.serve_forever, daemon=True).start()
    page_origin = f"http://127.0.0.1:{page_server.server_address[1]}"

    try:
        with sync_playwright() as playwright:
            # Playwright downloads no browser here: it drives Debian's chromium by its path.
            launch_args = ["--autoplay-policy=no-user-gesture-required"]
            if os.geteuid() == 0:
                launch_args.append("--no-sandbox")  # Chromium's sandbox refuses to run as root
            browser = playwright.chromium.launch(executable_path=shutil.which(args.chromium), args=launch_args,
                                                 timeout=30_000)
            print(f"browser: Chromium {browser.version}", flush=True)

            probe = browser.new_page()
            probe.set_content("<video></video>")
            can_play = lambda t: probe.evaluate("t => document.querySelector('video').canPlayType(t)", t)
            container = args.format
            if container == "auto":
                container = "mp4" if can_play('video/mp4; codecs="avc1.42E01E, mp4a.40.2"') else "webm"
            if not can_play('video/mp4; codecs="avc1.42E01E, mp4a.40.2"' if container == "mp4"
                            else 'video/webm; codecs="vp9, opus"'):
                raise CannotRun(f"this Chromium plays no {container} with its codecs")
            probe.close()

            fixture = make_fixture(folder, container)
            print(f"fixture: {os.path.basename(fixture)}, {DURATION} s, {os.path.getsize(fixture)} bytes", flush=True)

            # The media origin, throttled per connection, so serve is still downloading as playback starts.
            origin_url = processes.start("origin", [origin, "--port", "0", "--rate", str(args.rate), fixture],
                                         "listening on ")
            media_url = origin_url.rstrip("/") + "/" + os.path.basename(fixture)

            def serve(name, allow):
                flags = ["--allow-origin", page_origin] if allow else []
                line = processes.start(name, [vfetch, "serve", "--port", "0", "--cache-dir",
                                              os.path.join(folder, name), *flags], "vfetch serve: ")
                return line.split(" ", 1)[0]

            allowing = serve("serve-allowing", allow=not args.no_allow)
            refusing = serve("serve-refusing", allow=False)
            print(f"page origin {page_origin}; media origin {origin_url}; serve {allowing} "
                  f"(--allow-origin {page_origin}{' NOT GIVEN: --no-allow' if args.no_allow else ''}), "
                  f"serve {refusing} (no --allow-origin)", flush=True)

            def page_for(serve_url, cors=True):
                media = f"{serve_url}/media?url={urllib.parse.quote(media_url, safe='')}"
                return f"{page_origin}/page.html?src={urllib.parse.quote(media, safe='')}" + ("" if cors else "&cors=0")

            allowed_page(browser, checks, page_for(allowing), allowing)
            refused_page(browser, checks, page_for(refusing), refusing, "crossorigin, no --allow-origin")
            refused_page(browser, checks, page_for(refusing, cors=False), refusing, "no crossorigin: a web page never reaches loopback")
            own_page(browser, checks, refusing, media_url)
            browser.close()
    finally:
        page_server.shutdown()
        page_server.server_close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="folder holding vfetch and vfetch-origin")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the browser Playwright drives")
    parser.add_argument("--timeout", type=float, default=90, help="bound of the whole run, seconds")
    parser.add_argument("--rate", type=int, default=256 * 1024, help="media origin's bytes/s per connection")
    parser.add_argument("--format", choices=["auto", "mp4", "webm"], default="auto",
                        help="fixture: H.264/AAC MP4 when Chromium plays it (auto), else VP9/Opus WebM")
    parser.add_argument("--no-allow", action="store_true",
                        help="start the 'allowing' serve without --allow-origin: its checks must then fail")
    args = parser.parse_args()

    sys.exit(run_bounded(args, "browser test", "vfetch-browser-", run))


def run_bounded(args, name, prefix, run):
    """Runs `run(args, folder, processes, checks)` within `args.timeout`, stops every process it started
    and removes its folder on every path, prints the checks' tally; returns the exit status."""

    def on_signal(number, _frame):
        raise Stopped(f"the whole run took over {args.timeout:.0f} s" if number == signal.SIGALRM
                      else f"stopped by signal {number}")

    signal.signal(signal.SIGALRM, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.setitimer(signal.ITIMER_REAL, args.timeout)

    started = time.monotonic()
    checks = Checks()
    folder = tempfile.mkdtemp(prefix=prefix)
    processes = Processes(folder)
    status = 0
    try:
        run(args, folder, processes, checks)
    except CannotRun as error:
        print(f"cannot run: {error}", file=sys.stderr, flush=True)
        status = 2
    except Stopped as error:
        checks.fail(str(error))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        processes.stop_all()
        if checks.failed:
            for process in processes.started:
                text = processes.stderr(process)
                if text:
                    print(f"--- {process}{text}", file=sys.stderr)
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{name}: {time.monotonic() - started:.1f} s", flush=True)
    print(f"{checks.passed} passed, {checks.failed} failed", flush=True)
    if status == 0 and (checks.failed or not checks.passed):
        status = 1
    return status


if __name__ == "__main__":
    main()
