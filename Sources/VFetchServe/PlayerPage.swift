import NIOHTTP1
import VFetchCore

/// The small player page serve answers at `/`: a `<video>` and a URL box, nothing from elsewhere,
/// so a user can watch through the cache in a browser without anything else. Serve's other page, the
/// queue's (`QueuePage`), is served the same way.
enum PlayerPage {
    /// The pages' files, by path.
    enum File: Equatable, Sendable {
        case html, script, css
        case queueHTML, queueScript, queueCSS

        init?(path: String) {
            switch path {
            case "/": self = .html
            case "/player.js": self = .script
            case "/player.css": self = .css
            case "/queue": self = .queueHTML
            case "/queue.js": self = .queueScript
            case "/queue.css": self = .queueCSS
            default: return nil
            }
        }

        var type: String {
            switch self {
            case .html, .queueHTML: "text/html; charset=utf-8"
            case .script, .queueScript: "text/javascript; charset=utf-8"
            case .css, .queueCSS: "text/css; charset=utf-8"
            }
        }

        var text: String {
            switch self {
            case .html: PlayerPage.html
            case .script: PlayerPage.script
            case .css: PlayerPage.css
            case .queueHTML: QueuePage.html
            case .queueScript: QueuePage.script
            case .queueCSS: QueuePage.css
            }
        }

        var etag: String {
            switch self {
            case .html: PlayerPage.htmlETag
            case .script: PlayerPage.scriptETag
            case .css: PlayerPage.cssETag
            case .queueHTML: QueuePage.htmlETag
            case .queueScript: QueuePage.scriptETag
            case .queueCSS: QueuePage.cssETag
            }
        }

        var contentSecurityPolicy: String {
            switch self {
            case .html, .script, .css: PlayerPage.contentSecurityPolicy
            case .queueHTML, .queueScript, .queueCSS: QueuePage.contentSecurityPolicy
            }
        }
    }

    /// The route of the page's files: each with its ETag, revalidated on every use (a new vfetch may
    /// bring a new page), cheaply: a 304 when unchanged.
    static func reply(_ file: File, to head: HTTPRequestHead) -> Reply {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Security-Policy", value: file.contentSecurityPolicy)
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        headers.add(name: "Cache-Control", value: "no-cache")
        headers.add(name: "ETag", value: file.etag)
        switch head.preconditions(etag: file.etag, lastModified: nil) {
        case .proceed: return .content(.ok, type: file.type, body: Array(file.text.utf8), headers: headers)
        case .notModified: return Reply(status: .notModified, headers: headers)
        case .preconditionFailed: return .failure(.preconditionFailed, "a precondition (If-Match) failed")
        }
    }

    /// Only this page's own script and the cache's media; no frame may embed it.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; media-src 'self'; style-src 'self'; form-action 'self'; "
        + "base-uri 'none'; frame-ancestors 'none'"

    /// Each file's `ETag`: a digest of its text, the same from one run of this vfetch to the next.
    static let htmlETag = etag(html)
    static let cssETag = etag(css)
    static let scriptETag = etag(script)

    static func etag(_ text: String) -> String {
        var digest = SHA256()
        digest.update(Array(text.utf8))
        return "\"" + digest.finalize().prefix(16) + "\""
    }

    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>vfetch</title>
        <link rel="stylesheet" href="/player.css">
        <script src="/player.js" defer></script>
        </head>
        <body>
        <form method="get" action="/">
        <input id="url" name="url" type="url" placeholder="https://example.com/film.mp4" required autofocus>
        <button type="submit">Play</button>
        </form>
        <video id="player" controls playsinline></video>
        <p id="status"></p>
        </body>
        </html>

        """

    static let css = """
        body { font-family: sans-serif; margin: 1em; background: #111; color: #ddd; }
        form { display: flex; gap: 0.5em; margin-bottom: 1em; }
        input { flex: 1; font-size: 1em; }
        video { width: 100%; max-height: 80vh; background: #000; }

        """

    /// Plays `?url=` through `/media`; the page's own origin, so no CORS is involved.
    static let script = """
        "use strict";
        const url = new URLSearchParams(location.search).get("url");
        const video = document.getElementById("player");
        const status = document.getElementById("status");
        if (url) {
            document.getElementById("url").value = url;
            video.src = "/media?url=" + encodeURIComponent(url);
            video.play().catch(() => {});
        }
        video.addEventListener("error", () => {
            status.textContent = "cannot play: " + (video.error ? video.error.message || video.error.code : "unknown error");
        });

        """
}
