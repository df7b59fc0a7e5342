#!/usr/bin/env python3
"""vfetch serve shared through a cache tier: Debian's nginx runs docs/sharing-nginx.conf, the
configuration docs/SHARING.md shows (only its ports, paths and password file changed), in front of
`vfetch serve`, in front of the test origin (`vfetch-origin`), all on 127.0.0.1.

Checks, each printed as `ok:` or `FAIL:`, then `N passed, N failed`:
  - nginx refuses a request without the password (401) and one from an address it does not allow
    (403), and passes nothing but /media;
  - ffmpeg plays a video file (its moov at the end) through the tier twice: both decode the source's
    frames, nginx asks serve for each slice at most once, and the second play, with serve stopped, is
    answered by nginx's cache, every slice a HIT; the bytes of the file and of a range across slices
    are the source's; the origin sent the file at most 1.5 times;
  - ffmpeg plays an HLS master through the tier twice, the source's frames both times, every segment
    of the second play a HIT (the playlists go to serve every time: it marks them no-cache).

Usage: tier.py --bin DIR   (DIR holds `vfetch` and `vfetch-origin`: `swift build --show-bin-path`)
Exit 0 only when every check passes; 1 when one fails; 2 when the test cannot run. The whole run is
bounded (--timeout), and every process it starts and its temporary folder are removed on every path.
"""

import argparse
import base64
import hashlib
import http.client
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse

# The harness of the browser tests: processes in sessions of their own, the run's bound, the checks.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Browser"))
from playback import CannotRun, run_bounded  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(REPO, "docs", "sharing-nginx.conf")
DOC = os.path.join(REPO, "docs", "SHARING.md")
USER, PASSWORD = "ann", "household"
SLICE = 1 << 20  # the configuration's `slice 1m`
# Bytes the origin may send of the file, over its size. serve's own download costs some: it asks for
# head and tail at once, and splits its transfers where ffmpeg seeks (ffmpeg alone on serve, no tier:
# 1.27 to 1.39 times); a cache that fetched the file again would pass 2.
MAX_ORIGIN_RATIO = 1.5
# The origin's rate per connection, as an origin on the internet has one: unthrottled on loopback, a
# transfer serve stops has sent the rest of its range into the socket already, and is counted.
ORIGIN_RATE = 4 << 20
# nginx's access log in the configuration's format: one line per request and per slice.
LOG_LINE = re.compile(r'"GET (?P<target>\S+) HTTP/[\d.]+" (?P<status>\d+) \d+ range="[^"]*" slice="[^"]*" '
                      r'cache=(?P<cache>\S+)$')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(argv, timeout=90):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise CannotRun(f"{argv[0]} failed ({result.returncode}): {result.stderr.strip()[-1000:]}")
    return result.stdout


def make_media(folder):
    """A 40 s 640x360 video file whose moov is at its end (about 8 MiB: eight slices), and a 20 s HLS
    master of two variants cut with -c copy from sources of their own, so frames can be compared."""
    lavfi = ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=40",
             "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=40"]
    encoding = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "50", "-keyint_min", "50",
                "-sc_threshold", "0", "-b:v", "1500k", "-c:a", "aac", "-b:a", "96k"]
    ffmpeg = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]
    clip, hls = os.path.join(folder, "clip.mp4"), os.path.join(folder, "hls")
    os.makedirs(hls)
    run([*ffmpeg, *lavfi, *encoding, clip])
    sources = [os.path.join(folder, f"source-v{i}.mp4") for i in (0, 1)]
    run([*ffmpeg, *lavfi, "-t", "20", "-filter_complex", "[0:v]split=2[a][b];[b]scale=320:180[small]",
         "-map", "[a]", "-map", "1:a", *encoding, sources[0], "-map", "[small]", "-map", "1:a", *encoding, sources[1]])
    run([*ffmpeg, "-i", sources[0], "-i", sources[1], "-map", "0:v", "-map", "0:a", "-map", "1:v", "-map", "1:a",
         "-c", "copy", "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod",
         "-hls_segment_filename", os.path.join(hls, "v%v", "segment%d.ts"), "-master_pl_name", "master.m3u8",
         "-var_stream_map", "v:0,a:0 v:1,a:1", os.path.join(hls, "v%v", "index.m3u8")])
    return clip, hls, sources[0]


def frames(url):
    """The MD5 of every decoded frame of the first video stream ffmpeg reads from url, and what ffmpeg
    said when it failed."""
    result = subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-i", url, "-map", "0:v:0",
                             "-f", "framemd5", "-"], capture_output=True, text=True, timeout=120)
    checksums = [line.rsplit(",", 1)[-1].strip() for line in result.stdout.splitlines() if line and not line.startswith("#")]
    return checksums, "" if result.returncode == 0 else f" (ffmpeg exited with {result.returncode}: {result.stderr.strip()[-300:]})"


def source_frames(path):
    checksums, error = frames(path)
    if error or not checksums:
        raise CannotRun(f"ffmpeg cannot decode {path}{error}")
    return checksums


def site_config(port, serve_port, run_dir):
    """docs/sharing-nginx.conf with the test's ports and paths, each replaced where the doc has it once."""
    with open(CONFIG) as file:
        text = file.read()
    for doc_value, test_value in [("listen 8080;", f"listen 127.0.0.1:{port};"),
                                  ("127.0.0.1:7311", f"127.0.0.1:{serve_port}"),
                                  ("/var/cache/nginx/vfetch", os.path.join(run_dir, "cache")),
                                  ("/etc/nginx/vfetch.htpasswd", os.path.join(run_dir, "htpasswd")),
                                  ("/var/log/nginx/vfetch.log", os.path.join(run_dir, "access.log"))]:
        if text.count(doc_value) != 1:
            raise CannotRun(f"docs/sharing-nginx.conf has '{doc_value}' {text.count(doc_value)} times, not once: "
                            "update this test with it")
        text = text.replace(doc_value, test_value)
    return text


def start_nginx(nginx, processes, folder, serve_port):
    """Debian's nginx, in the foreground, with the configuration inside Debian's http {} settings; its
    port. Its prefix, temp paths, cache, log and password file are in folder/nginx."""
    run_dir = os.path.join(folder, "nginx")
    os.makedirs(os.path.join(run_dir, "tmp"))
    os.chmod(folder, 0o755)  # started as root, its workers run as nobody
    os.chmod(run_dir, 0o755)
    hashed = run(["openssl", "passwd", "-6", PASSWORD]).strip()  # as docs/SHARING.md makes it
    with open(os.path.join(run_dir, "htpasswd"), "w") as file:
        file.write(f"{USER}:{hashed}\n")
    port = free_port()
    with open(os.path.join(run_dir, "vfetch.conf"), "w") as file:
        file.write(site_config(port, serve_port, run_dir))
    built = subprocess.run([nginx, "-V"], capture_output=True, text=True).stderr  # how it was built
    if "--with-http_slice_module" not in built:
        raise CannotRun("this nginx has no slice module (Debian's nginx package has it)")
    conf_path = re.search(r"--conf-path=(\S+)", built)  # where its mime.types is
    conf_dir = os.path.dirname(conf_path.group(1)) if conf_path else "/etc/nginx"
    temp = "\n".join(f"    {kind}_temp_path {run_dir}/tmp/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    # Debian's nginx.conf, but for its user, paths and includes: its events {} and http {} settings.
    main = f"""daemon off;
pid {run_dir}/nginx.pid;
error_log {run_dir}/error.log;
worker_processes auto;
events {{
    worker_connections 768;
}}
http {{
{temp}
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    include {conf_dir}/mime.types;
    default_type application/octet-stream;
    gzip on;
    include {run_dir}/vfetch.conf;
}}
"""
    conf = os.path.join(run_dir, "nginx.conf")
    with open(conf, "w") as file:
        file.write(main)
    argv = [nginx, "-c", conf, "-p", run_dir + "/", "-e", os.path.join(run_dir, "error.log")]
    run([*argv, "-q", "-t"])
    processes.start("nginx", argv, None)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return port, os.path.join(run_dir, "access.log")
        except OSError:
            time.sleep(0.1)
    raise CannotRun(f"nginx is not listening on {port}{processes.stderr('nginx')}")


class Tier:
    """Requests to nginx, and the lines of its access log since a mark."""

    def __init__(self, port, log):
        self.port, self.log, self.mark = port, log, 0
        self.base = f"http://127.0.0.1:{port}"
        self.player_base = f"http://{USER}:{PASSWORD}@127.0.0.1:{port}"

    @staticmethod
    def target(url):
        return "/media?url=" + urllib.parse.quote(url, safe="")

    def get(self, target, headers=None, password=True, source="127.0.0.1"):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60, source_address=(source, 0))
        headers = dict(headers or {})
        if password:
            headers["Authorization"] = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        try:
            connection.request("GET", target, headers=headers)
            response = connection.getresponse()
            return response.status, response.headers, response.read()
        finally:
            connection.close()

    def lines(self):
        """The log's lines since the last call, once nginx has written them all (nginx logs a request
        as it ends, a moment after the player has gone)."""
        size = -1
        for _ in range(50):
            if os.path.getsize(self.log) == size:
                break
            size = os.path.getsize(self.log)
            time.sleep(0.2)
        with open(self.log) as file:
            file.seek(self.mark)
            text = file.read()
            self.mark = file.tell()
        return [match.groupdict() for match in map(LOG_LINE.search, text.splitlines()) if match]

    def slices(self):
        """The lines since the last call of requests nginx looked up in its cache, one per slice: all
        but those it refused (401, 403: `cache=-`); a player that leaves mid-answer is a 499."""
        return [line for line in self.lines() if line["cache"] != "-"]


def check(checks, good, message):
    (checks.ok if good else checks.fail)(message)


def served(slices):
    """How many of the slices (log lines) nginx answered from its cache (HIT), asked serve for (MISS)…"""
    counts = {}
    for line in slices:
        counts[line["cache"]] = counts.get(line["cache"], 0) + 1
    return counts


def origin_counts(processes):
    """What vfetch-origin said it sent on its way out: path -> (bytes, requests)."""
    processes.stop("origin")
    found = re.findall(r"^served (\S+) (\d+) bytes in (\d+) requests$", processes.stderr("origin"), re.M)
    return {path: (int(sent), int(requests)) for path, sent, requests in found}


def check_access(checks, tier, media_url):
    status, headers, _ = tier.get(tier.target(media_url), password=False)
    if status == 401 and headers.get("WWW-Authenticate", "").startswith("Basic"):
        checks.ok(f"without the password: 401, {headers['WWW-Authenticate']}")
    else:
        checks.fail(f"without the password: {status}, not 401 with a Basic challenge")
    status, _, _ = tier.get(tier.target(media_url), source="127.0.0.2")
    check(checks, status == 403, f"from 127.0.0.2, an address the configuration does not allow: {status}")
    refused = {path: tier.get(path)[0] for path in ("/", "/status", "/api/downloads")}
    check(checks, set(refused.values()) == {404}, f"nothing but /media passes: {refused}")


def check_file(checks, tier, processes, clip, media_url, expected):
    """Two plays of the file, its bytes and a range through the tier: all but the first play with serve
    stopped, so from nginx's cache alone (nginx does not log a request whose player left mid-answer,
    as ffmpeg does when it seeks, so its log cannot prove that alone)."""
    size = os.path.getsize(clip)
    slices = -(-size // SLICE)
    url = tier.player_base + tier.target(media_url)
    for play in ("first", "second"):
        if play == "second":
            processes.stop("serve")
            print("serve stopped: what follows comes from nginx's cache alone", flush=True)
        played, error = frames(url)
        answers = tier.slices()
        counts = served(answers)
        exact = played == expected
        check(checks, exact, f"file, {play} play: {len(played)} frames, {'the source' if exact else 'NOT the source'}'s"
              f"{error}; {len(answers)} slices answered, {counts}")
        if play == "first" and counts.get("MISS", 0) > slices:
            checks.fail(f"file, first play: nginx asked serve for {counts.get('MISS')} slices of {slices}")
        if play == "second" and (counts.get("HIT", 0) != len(answers) or len(answers) < slices):
            checks.fail(f"file, second play: not every slice a HIT ({counts}; the file has {slices} slices)")
    with open(clip, "rb") as file:
        source = file.read()
    status, _, body = tier.get(tier.target(media_url))
    digest = hashlib.sha256(body).hexdigest()
    exact = status == 200 and digest == hashlib.sha256(source).hexdigest()
    check(checks, exact, f"file through the tier: {status}, {len(body)} bytes, sha256 {digest[:16]}… "
                         f"{'=' if exact else '≠'} the source's")
    first, last = SLICE - 1000, 2 * SLICE + 5000  # across two slice boundaries
    status, headers, body = tier.get(tier.target(media_url), {"Range": f"bytes={first}-{last}"})
    exact = status == 206 and body == source[first:last + 1] and headers.get("Content-Range") == f"bytes {first}-{last}/{size}"
    check(checks, exact, f"range {first}-{last} through the tier: {status}, {headers.get('Content-Range')}, "
                         f"{len(body)} bytes, {'exact' if exact else 'NOT the source'}")
    counts = served(tier.slices())
    check(checks, set(counts) == {"HIT"}, f"file and range read again: every slice from the cache, {counts}")


def check_hls(checks, tier, hls, master_url, expected):
    """Two plays of the master: the segments of the second all HITs."""
    url = tier.player_base + tier.target(master_url)
    for play in ("first", "second"):
        played, error = frames(url)
        answers = tier.slices()
        kinds = {"segment": [], "playlist": []}
        for line in answers:
            asked = urllib.parse.parse_qs(urllib.parse.urlsplit(line["target"]).query).get("url", [""])[0]
            kinds["playlist" if asked.endswith(".m3u8") else "segment"].append(line)
        exact = played == expected
        check(checks, exact, f"HLS, {play} play: {len(played)} frames, {'the source' if exact else 'NOT the source'}'s"
              f"{error}; segments {served(kinds['segment'])}, playlists {served(kinds['playlist'])}")
        if play == "second":
            segments = len([n for n in os.listdir(os.path.join(hls, "v0")) if n.endswith(".ts")])
            hits = served(kinds["segment"]).get("HIT", 0)
            if hits != len(kinds["segment"]) or hits < segments:
                checks.fail(f"HLS, second play: not every segment a HIT ({served(kinds['segment'])}; "
                            f"the variant played has {segments} segments)")


def check_origin(checks, processes, folder):
    """The origin sent the file at most MAX_ORIGIN_RATIO times its size; the HLS files' figures are said."""
    counts = origin_counts(processes)
    sent, requests = counts.get("/clip.mp4", (0, 0))
    ratio = sent / os.path.getsize(os.path.join(folder, "clip.mp4"))
    check(checks, 0 < ratio <= MAX_ORIGIN_RATIO, f"the origin sent clip.mp4 {ratio:.2f} times its size "
          f"({sent} bytes in {requests} requests; at most {MAX_ORIGIN_RATIO})")
    segments = [(sent, os.path.getsize(os.path.join(folder, path.lstrip("/"))))
                for path, (sent, _) in counts.items() if path.endswith(".ts")]
    if segments:
        total, sizes = sum(s for s, _ in segments), sum(size for _, size in segments)
        print(f"the origin sent {len(segments)} HLS segments {total / sizes:.2f} times their size "
              f"({total} bytes for {sizes})", flush=True)


def run_tier(args, folder, processes, checks):
    nginx = shutil.which("nginx", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    for tool in (nginx, shutil.which("ffmpeg"), shutil.which("openssl")):
        if tool is None:
            raise CannotRun("nginx, ffmpeg or openssl missing: scripts/install-deps.sh tier installs them")
    vfetch, origin = os.path.join(args.bin, "vfetch"), os.path.join(args.bin, "vfetch-origin")
    for binary in (vfetch, origin):
        if not os.access(binary, os.X_OK):
            raise CannotRun(f"{binary} not found: swift build --product {os.path.basename(binary)}")
    with open(CONFIG) as config, open(DOC) as doc:
        shown = config.read() in doc.read()
    check(checks, shown, "docs/SHARING.md shows docs/sharing-nginx.conf verbatim")

    clip, hls, hls_source = make_media(folder)
    print(f"media: clip.mp4 {os.path.getsize(clip)} bytes ({-(-os.path.getsize(clip) // SLICE)} slices), "
          "an HLS master of 2 variants", flush=True)
    origin_url = processes.start("origin", [origin, "--port", "0", "--rate", str(ORIGIN_RATE), clip, hls],
                                 "listening on ").rstrip("/")
    serve_url = processes.start("serve", [vfetch, "serve", "--port", "0", "--cache-dir", os.path.join(folder, "serve-cache")],
                                "vfetch serve: ").split(" ", 1)[0]
    port, log = start_nginx(nginx, processes, folder, urllib.parse.urlsplit(serve_url).port)
    tier = Tier(port, log)
    print(f"origin {origin_url}; serve {serve_url}; nginx {tier.base}", flush=True)

    check_access(checks, tier, origin_url + "/clip.mp4")
    tier.lines()  # the refusals'
    # HLS first: its playlists go to serve on every play.
    check_hls(checks, tier, hls, origin_url + "/hls/master.m3u8", source_frames(hls_source))
    check_file(checks, tier, processes, clip, origin_url + "/clip.mp4", source_frames(clip))
    check_origin(checks, processes, folder)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="folder holding vfetch and vfetch-origin")
    parser.add_argument("--timeout", type=float, default=180, help="bound of the whole run, seconds")
    args = parser.parse_args()
    sys.exit(run_bounded(args, "cache tier test", "vfetch-tier-", run_tier))


if __name__ == "__main__":
    main()
