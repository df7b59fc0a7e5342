import VFetchCore

/// The queue's web page at `/queue`, as AriaNg is for aria2: every background download with its
/// progress, speed and state, a form to add one, and its buttons. It holds no secret: it reaches the
/// API only with the cache's token, which it takes from its address's fragment (`#token=…`, never
/// sent to a server, so never in a log or a `Referer`) and sends as `Authorization: Bearer`, as
/// `vfetch add` does. Without it, every API request is refused (see `RequestGate`).
///
/// Every string of the queue (URLs, paths, errors) is hostile: the script sets them as text, never
/// as HTML, and the page runs no script but its own (`contentSecurityPolicy`).
package enum QueuePage {
    /// The page's address on the server at `server` (`http://HOST:PORT`), carrying the token and the
    /// directory downloads go into by default (as `vfetch add` writes into the current one).
    package static func address(server: String, token: String, directory: String) -> String {
        server + "/queue#token=" + percentEncodedValue(token) + "&dir=" + percentEncodedValue(directory)
    }

    /// Its own script, style and API; no frame may embed it (a page could make the user click its buttons).
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'none'; "
        + "base-uri 'none'; frame-ancestors 'none'"

    static let htmlETag = PlayerPage.etag(html)
    static let cssETag = PlayerPage.etag(css)
    static let scriptETag = PlayerPage.etag(script)

    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>vfetch queue</title>
        <link rel="stylesheet" href="/queue.css">
        <script src="/queue.js" defer></script>
        </head>
        <body>
        <form id="add">
        <input id="url" type="url" placeholder="https://example.com/film.mp4" required>
        <input id="format" placeholder="format (HLS/DASH): best, 720p, lang=en…">
        <input id="directory" placeholder="into the directory (absolute path)" required>
        <button type="submit">Add</button>
        </form>
        <p id="status" role="status"></p>
        <table>
        <thead><tr><th>ID</th><th>File</th><th>Progress</th><th>Speed</th><th>State</th><th></th></tr></thead>
        <tbody id="downloads"></tbody>
        </table>
        </body>
        </html>

        """

    static let css = """
        body { font-family: sans-serif; margin: 1em; background: #111; color: #ddd; }
        form { display: flex; flex-wrap: wrap; gap: 0.5em; margin-bottom: 1em; }
        #url { flex: 3; min-width: 20em; }
        #format, #directory { flex: 1; min-width: 10em; }
        table { width: 100%; border-collapse: collapse; }
        th, td { text-align: left; padding: 0.3em 0.5em; border-bottom: 1px solid #333; }
        td.file { word-break: break-all; }
        td.file small { display: block; color: #e77; }
        progress { width: 10em; }
        button[hidden] { display: none; }

        """

    /// Lists the queue, then follows `/api/events` (read with `fetch`, which can send the token;
    /// `EventSource` cannot).
    static let script = """
        "use strict";
        // #token=…&dir=… (from `vfetch ls --web`): kept for this tab, then taken off the address.
        const given = new URLSearchParams(location.hash.slice(1));
        for (const [name, key] of [["token", "token"], ["dir", "directory"]]) {
            if (given.has(name)) sessionStorage.setItem(key, given.get(name));
        }
        if (location.hash) history.replaceState(null, "", location.pathname);
        const token = sessionStorage.getItem("token") || "";
        const statusLine = document.getElementById("status");
        const table = document.getElementById("downloads");
        const rows = new Map();  // download ID -> its row's elements
        document.getElementById("directory").value = sessionStorage.getItem("directory") || "";

        class Refused extends Error {}

        async function api(method, path, body) {
            const init = {method, headers: {Authorization: "Bearer " + token}};
            if (body !== undefined) {
                init.headers["Content-Type"] = "application/json";
                init.body = JSON.stringify(body);
            }
            const response = await fetch("/api/" + path, init);
            const answer = await response.json().catch(() => ({}));
            if (response.status === 401) throw new Refused("no access: open the address `vfetch ls --web` prints (it carries the token)");
            if (!response.ok) throw new Error(answer.error || "HTTP " + response.status);
            return answer;
        }

        function say(text) { statusLine.textContent = text; }

        function size(bytes) {
            const units = ["B", "KiB", "MiB", "GiB", "TiB"];
            let unit = 0;
            while (bytes >= 1024 && unit < units.length - 1) { bytes /= 1024; unit += 1; }
            return (unit === 0 ? bytes : bytes.toFixed(1)) + " " + units[unit];
        }

        function cell(row, className) {
            const td = row.insertCell();
            if (className) td.className = className;
            return td;
        }

        function button(td, label, action) {
            const b = document.createElement("button");
            b.type = "button";
            b.textContent = label;
            b.className = label.toLowerCase();
            b.addEventListener("click", () => action().catch(error => say(error.message)));
            return td.appendChild(b);
        }

        function rowFor(id) {
            if (rows.has(id)) return rows.get(id);
            const tr = table.insertRow();
            tr.dataset.id = id;
            const r = {tr, id: cell(tr), file: cell(tr, "file"), bar: document.createElement("progress")};
            r.name = r.file.appendChild(document.createElement("span"));
            r.note = r.file.appendChild(document.createElement("small"));
            const progress = cell(tr, "progress");
            progress.appendChild(r.bar);
            r.percent = progress.appendChild(document.createElement("span"));
            r.speed = cell(tr, "speed");
            r.state = cell(tr, "state");
            const actions = cell(tr, "actions");
            const path = "downloads/" + encodeURIComponent(id);
            r.pause = button(actions, "Pause", async () => show(await api("POST", path + "/pause")));
            r.resume = button(actions, "Resume", async () => show(await api("POST", path + "/resume")));
            r.cancel = button(actions, "Cancel", async () => forget((await api("DELETE", path + "?delete=true")).removed));
            r.remove = button(actions, "Remove", async () => forget((await api("DELETE", path)).removed));
            r.id.textContent = id;
            rows.set(id, r);
            return r;
        }

        // Every string is set as text: URLs, paths and errors come from the queue and are hostile.
        function show(item) {
            const r = rowFor(item.id);
            r.tr.dataset.state = item.state;
            r.name.textContent = item.path || item.url;
            r.name.title = item.url;
            r.note.textContent = item.error || "";
            if (item.length > 0 && item.bytes_done !== null) {
                r.bar.max = item.length;
                r.bar.value = item.bytes_done;
                r.percent.textContent = " " + (100 * item.bytes_done / item.length).toFixed(1) + "%";
            } else if (item.state === "done") {
                r.bar.max = 1;
                r.bar.value = 1;
                r.percent.textContent = " 100%";
            }
            r.speed.textContent = item.state === "running" && item.rate ? size(item.rate) + "/s" : "";
            r.state.textContent = item.state;
            const active = item.state === "queued" || item.state === "running";
            r.pause.hidden = !active;
            r.resume.hidden = item.state !== "paused" && item.state !== "failed";
            r.cancel.hidden = item.state === "done" || item.state === "failed";
            r.remove.hidden = !r.cancel.hidden;
        }

        function forget(id) {
            const r = rows.get(id);
            if (r) r.tr.remove();
            rows.delete(id);
        }

        // One server-sent event: "event: NAME" and "data: JSON" lines.
        function handle(frame) {
            let name = "message", data = "";
            for (const line of frame.split("\\n")) {
                if (line.startsWith("event:")) name = line.slice(6).trim();
                else if (line.startsWith("data:")) data += line.slice(5).trim();
            }
            if (!data) return;
            const body = JSON.parse(data);
            if (name === "state" || name === "progress") show(body);
            else if (name === "removed") forget(body.removed);
            else if (name === "notice" && rows.has(body.id)) rows.get(body.id).note.textContent = body.message;
        }

        async function follow() {
            for (;;) {
                try {
                    const response = await fetch("/api/events", {headers: {Authorization: "Bearer " + token}});
                    if (response.status === 401) throw new Refused("no access: open the address `vfetch ls --web` prints (it carries the token)");
                    if (!response.ok) throw new Error("events: HTTP " + response.status);
                    // Listed once subscribed, so no change falls between the two.
                    for (const item of (await api("GET", "downloads")).downloads) show(item);
                    say("");
                    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
                    let buffer = "";
                    for (;;) {
                        const {value, done} = await reader.read();
                        if (done) break;
                        buffer += value;
                        let end;
                        while ((end = buffer.indexOf("\\n\\n")) >= 0) {
                            handle(buffer.slice(0, end));
                            buffer = buffer.slice(end + 2);
                        }
                    }
                    say("the server closed the event stream; reconnecting");
                } catch (error) {
                    say(error.message);
                    if (error instanceof Refused) return;
                }
                await new Promise(resolve => setTimeout(resolve, 2000));
            }
        }

        document.getElementById("add").addEventListener("submit", async event => {
            event.preventDefault();
            const url = document.getElementById("url").value;
            const format = document.getElementById("format").value.trim();
            const directory = document.getElementById("directory").value.trim();
            try {
                const body = {url, output: directory, output_is_directory: true};
                if (format) body.format = format;
                const {id} = await api("POST", "downloads", body);
                sessionStorage.setItem("directory", directory);
                document.getElementById("url").value = "";
                say("added " + id);
                show(await api("GET", "downloads/" + encodeURIComponent(id)));
            } catch (error) {
                say(error.message);
            }
        });

        follow();

        """
}
