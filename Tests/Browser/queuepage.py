#!/usr/bin/env python3
"""The queue's web page of `vfetch serve` (/queue) in a real browser: headless Chromium (Debian's
`chromium`, driven by Playwright) opens the address `vfetch ls --web` prints, the token in its fragment.

Checks, each printed as `ok:` or `FAIL:`, then `N passed, N failed`:
  - through the page's form, a file of a throttled origin is added: its bar moves; paused, the bar
    stops and the state says paused; resumed, it moves again; cancelled, it leaves the list and
    its partial data goes;
  - another file added through the form finishes, byte for byte the origin's (SHA-256);
  - a download whose file name is HTML shows as text, no element made of it;
  - the page without the token, and with a wrong one, lists nothing and adds nothing;
  - a page of another origin, even one that knows the token, cannot add a download.

Usage: queuepage.py --bin DIR   (DIR holds `vfetch` and `vfetch-origin`: `swift build --show-bin-path`)
Exit 0 only when every check passes; 1 when one fails; 2 when the test cannot run. The whole run is
bounded (--timeout), and every process it starts and its temporary folder are removed on every path.
"""

import argparse
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

from playback import CannotRun, Timeout, run_bounded

MIB = 1 << 20

# A page of another origin that tries to drive serve's API with the right token (given in its query).
FOREIGN_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>another site</title></head><body><script>
const params = new URLSearchParams(location.search);
window.outcome = fetch(params.get("api") + "/api/downloads", {
  method: "POST", headers: {"Authorization": "Bearer " + params.get("token"), "Content-Type": "application/json"},
  body: JSON.stringify({url: params.get("url"), output: params.get("dir"), output_is_directory: true}),
}).then(r => "answered " + r.status, e => "refused: " + e.message);
</script></body></html>
"""


class ForeignHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = FOREIGN_PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def sha256(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


class API:
    """serve's queue API as `vfetch ls` reads it, with the token: what the page did, seen from outside."""

    def __init__(self, base, token):
        self.base, self.token = base, token

    def downloads(self):
        request = urllib.request.Request(self.base + "/api/downloads", headers={"Authorization": "Bearer " + self.token})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)["downloads"]

    def add(self, url, output):
        body = json.dumps({"url": url, "output": output}).encode()
        request = urllib.request.Request(self.base + "/api/downloads", data=body, method="POST", headers={
            "Authorization": "Bearer " + self.token, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)["id"]


def wait_for(page, expression, seconds, what, argument=None):
    """Polls a JS function of `argument` until it is true; raises Timeout naming what was awaited."""
    try:
        page.wait_for_function(expression, arg=argument, timeout=seconds * 1000, polling=100)
    except Exception as error:
        status = page.evaluate("() => document.getElementById('status').textContent")
        rows = page.evaluate("() => [...document.querySelectorAll('#downloads tr')].map(r => r.innerText)")
        raise Timeout(f"{what}: not within {seconds} s (status line '{status}', rows {rows}; {type(error).__name__})")


ROW = "id => document.querySelector(`#downloads tr[data-id='${id}']`)"


def bar(page, id):
    return page.evaluate(f"id => ({ROW})(id).querySelector('progress').value", id)


def state(page, id):
    return page.evaluate(f"id => ({ROW})(id).dataset.state", id)


def add_through_form(page, url, format=""):
    """Fills the form and submits it; returns the new download's ID, from the status line."""
    page.fill("#url", url)
    page.fill("#format", format)
    page.evaluate("() => { document.getElementById('status').textContent = ''; }")
    page.click("#add button[type=submit]")
    wait_for(page, "() => document.getElementById('status').textContent.startsWith('added ')", 10, f"adding {url}")
    return page.evaluate("() => document.getElementById('status').textContent").split(" ", 1)[1]


def click(page, id, action):
    page.click(f"#downloads tr[data-id='{id}'] button.{action}")


def queue_flow(browser, checks, address, api, origin_url, sources, downloads):
    page = browser.new_page()
    try:
        page.goto(address)
        if "#" in page.url:
            checks.fail(f"the token stays in the address bar: {page.url}")
        big = add_through_form(page, origin_url + "/big.bin")
        wait_for(page, f"id => {{ const r = ({ROW})(id); return r && r.querySelector('progress').value > 0; }}", 20,
                 "the big file's bar starts", big)
        first = bar(page, big)
        wait_for(page, f"([id, v]) => ({ROW})(id).querySelector('progress').value > v", 10, "the bar moves", [big, first])
        length = page.evaluate(f"id => ({ROW})(id).querySelector('progress').max", big)
        speed = page.evaluate(f"id => ({ROW})(id).cells[3].textContent", big)
        checks.ok(f"added through the form: {big} runs, its bar moves ({first} -> {bar(page, big)} of {length} bytes), "
                  f"speed '{speed}'")

        click(page, big, "pause")
        wait_for(page, f"id => ({ROW})(id).dataset.state === 'paused'", 10, "the state says paused", big)
        paused_at = bar(page, big)
        time.sleep(2)
        shown = page.evaluate(f"id => ({ROW})(id).cells[4].textContent", big)
        if bar(page, big) == paused_at and shown == "paused":
            checks.ok(f"paused: the bar stays at {paused_at} for 2 s, the state says '{shown}'")
        else:
            checks.fail(f"paused: the bar went from {paused_at} to {bar(page, big)}, the state says '{shown}'")

        click(page, big, "resume")
        wait_for(page, f"([id, v]) => ({ROW})(id).querySelector('progress').value > v", 15, "resumed, the bar moves",
                 [big, paused_at])
        checks.ok(f"resumed: state {state(page, big)}, the bar moves on from {paused_at} to {bar(page, big)}")

        click(page, big, "cancel")
        wait_for(page, f"id => !({ROW})(id)", 10, "cancelled, the row goes", big)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(name.startswith("big.bin") for name in os.listdir(downloads)):
            time.sleep(0.1)
        left = sorted(os.listdir(downloads))
        listed = [item["id"] for item in api.downloads()]
        if big not in listed and not any(name.startswith("big.bin") for name in left):
            checks.ok(f"cancelled: gone from the page and the queue, its partial data deleted (left: {left})")
        else:
            checks.fail(f"cancelled: queue {listed}, files {left}")

        small = add_through_form(page, origin_url + "/small.bin")
        wait_for(page, f"id => ({ROW})(id).dataset.state === 'done'", 30, "the small file finishes", small)
        path = os.path.join(downloads, "small.bin")
        got = sha256(path) if os.path.exists(path) else "no file"
        shown = page.evaluate(f"id => ({ROW})(id).querySelector('.file span').textContent", small)
        if got == sources["small.bin"] and bar(page, small) == page.evaluate(f"id => ({ROW})(id).querySelector('progress').max", small):
            checks.ok(f"{small} done: the bar full, the file shown as {shown}, SHA-256 the origin's ({got[:16]}…)")
        else:
            checks.fail(f"{small}: SHA-256 {got} against {sources['small.bin']}, bar {bar(page, small)}")

        # A file name that is HTML, added through the API as `vfetch add -o` would.
        hostile = "<img src=x onerror=\"window.pwned=1\">&amp;.bin"
        evil = api.add(origin_url + "/small.bin", os.path.join(downloads, hostile))
        wait_for(page, f"id => {{ const r = ({ROW})(id); return r && r.dataset.state === 'done'; }}", 30,
                 "the download of the hostile name finishes", evil)
        shown = page.evaluate(f"id => ({ROW})(id).querySelector('.file span').textContent", evil)
        made = page.evaluate("() => document.querySelectorAll('#downloads img').length")
        if shown.endswith(hostile) and made == 0 and page.evaluate("() => window.pwned") is None:
            checks.ok(f"a file name of HTML is shown as text ({shown[-len(hostile):]}), no element made of it")
        else:
            checks.fail(f"the hostile name shows as '{shown}', {made} img elements, pwned={page.evaluate('() => window.pwned')}")
    except Timeout as error:
        checks.fail(str(error))
    finally:
        page.close()


def without_token(browser, checks, serve_url, api, origin_url, downloads, fragment, name):
    """A page with no token, or a wrong one: it lists nothing, and its form adds nothing."""
    context = browser.new_context()  # a tab of its own: nothing kept from the page that had the token
    page = context.new_page()
    before = api.downloads()
    try:
        page.goto(serve_url + "/queue" + fragment)
        wait_for(page, "() => document.getElementById('status').textContent.startsWith('no access')", 10,
                 f"{name}: the page says it has no access")
        rows = page.evaluate("() => document.querySelectorAll('#downloads tr').length")
        page.fill("#url", origin_url + "/small.bin")
        page.fill("#directory", downloads)
        page.evaluate("() => { document.getElementById('status').textContent = ''; }")
        page.click("#add button[type=submit]")
        wait_for(page, "() => document.getElementById('status').textContent.startsWith('no access')", 10,
                 f"{name}: adding is refused")
        # Its script would send these with no token: a pause and a removal are refused too.
        answers = page.evaluate("""async ids => Promise.all(ids.flatMap(id => [
            fetch('/api/downloads/' + id + '/pause', {method: 'POST'}).then(r => r.status),
            fetch('/api/downloads/' + id, {method: 'DELETE'}).then(r => r.status)]))""",
                                [item["id"] for item in before])
        after = api.downloads()
        if rows == 0 and after == before and all(status == 401 for status in answers):
            checks.ok(f"{name}: no row listed, adding refused, pause and removal answered {sorted(set(answers))}, "
                      f"the queue unchanged ({len(after)} downloads)")
        else:
            checks.fail(f"{name}: {rows} rows, answers {answers}, queue {before} -> {after}")
    except Timeout as error:
        checks.fail(str(error))
    finally:
        context.close()


def foreign_origin(browser, checks, serve_url, api, token, origin_url, downloads):
    """A page of another origin that knows the token still cannot add: its preflight is refused."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ForeignHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = browser.new_page()
    before = api.downloads()
    try:
        query = urllib.parse.urlencode({"api": serve_url, "token": token, "url": origin_url + "/small.bin", "dir": downloads})
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/?{query}")
        outcome = page.evaluate("() => window.outcome")
        after = api.downloads()
        if outcome.startswith("refused") and after == before:
            checks.ok(f"a page of another origin with the token: {outcome}; the queue unchanged")
        else:
            checks.fail(f"a page of another origin: {outcome}; queue {len(before)} -> {len(after)}")
    finally:
        page.close()
        server.shutdown()
        server.server_close()


def run(args, folder, processes, checks):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise CannotRun("Python's playwright is missing: scripts/install-deps.sh browser installs it")
    if shutil.which(args.chromium) is None:
        raise CannotRun(f"{args.chromium} not found: scripts/install-deps.sh browser installs it")
    folder_of_binaries = os.path.abspath(args.bin)  # `ls --web` runs in another directory
    vfetch, origin = os.path.join(folder_of_binaries, "vfetch"), os.path.join(folder_of_binaries, "vfetch-origin")
    for binary in (vfetch, origin):
        if not os.access(binary, os.X_OK):
            raise CannotRun(f"{binary} not found: swift build --product {os.path.basename(binary)}")

    files = os.path.join(folder, "files")
    downloads = os.path.join(folder, "downloads")
    os.makedirs(files)
    os.makedirs(downloads)
    sources = {}
    for name, size in (("big.bin", 48 * MIB), ("small.bin", 2 * MIB)):
        with open(os.path.join(files, name), "wb") as file:
            file.write(os.urandom(size))
        sources[name] = sha256(os.path.join(files, name))

    # All connections together at --rate-link: the big file takes a minute, so its bar is watched moving.
    origin_url = processes.start("origin", [origin, "--port", "0", "--link-rate", str(args.rate),
                                           *(os.path.join(files, name) for name in sources)],
                                 "listening on ").rstrip("/")
    cache = os.path.join(folder, "cache")
    serve_url = processes.start("serve", [vfetch, "serve", "--port", "0", "--cache-dir", cache],
                                "vfetch serve: ").split(" ", 1)[0]
    printed = subprocess.run([vfetch, "ls", "--web", "--cache-dir", cache], cwd=downloads, capture_output=True,
                             text=True, timeout=30)
    if printed.returncode != 0 or "#token=" not in printed.stdout:
        raise CannotRun(f"vfetch ls --web: exit {printed.returncode}, {printed.stdout!r} {printed.stderr!r}")
    address = printed.stdout.strip()
    with open(os.path.join(cache, "token")) as file:
        token = file.read().strip()
    api = API(serve_url, token)
    print(f"origin {origin_url} (link rate {args.rate} B/s); serve {serve_url}; page {address.split('#')[0]}", flush=True)

    with sync_playwright() as playwright:
        launch_args = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium's sandbox refuses to run as root
        browser = playwright.chromium.launch(executable_path=shutil.which(args.chromium), args=launch_args,
                                             timeout=30_000)
        print(f"browser: Chromium {browser.version}", flush=True)
        queue_flow(browser, checks, address, api, origin_url, sources, downloads)
        without_token(browser, checks, serve_url, api, origin_url, downloads, "", "without the token")
        without_token(browser, checks, serve_url, api, origin_url, downloads, "#token=" + "0" * len(token),
                      "with a wrong token")
        foreign_origin(browser, checks, serve_url, api, token, origin_url, downloads)
        browser.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="folder holding vfetch and vfetch-origin")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the browser Playwright drives")
    parser.add_argument("--timeout", type=float, default=120, help="bound of the whole run, seconds")
    parser.add_argument("--rate", type=int, default=MIB, help="the origin's bytes/s, all connections together")
    args = parser.parse_args()
    sys.exit(run_bounded(args, "queue page test", "vfetch-queue-", run))


if __name__ == "__main__":
    main()
