import Foundation

/// How `vfetch serve` passes on an origin's `Content-Type`.
///
/// Serve answers on a local origin that every web page can point a browser at: bytes it relays must
/// never run as a page there (which would read `/status` and use `/media` as a proxy). Media and
/// playlists pass; a web page is refused, which also tells a user why a player gets nothing (a
/// login or error page); anything else is sent as an opaque download.
package enum ServedContentType: Equatable, Sendable {
    /// Media or a playlist, sent as this type.
    case media(String)
    /// Sent as `application/octet-stream`, as an attachment.
    case opaque
    /// A document a browser would render; refused. The type, for the message.
    case page(String)

    package init(origin contentType: String?) {
        let essence =
            (contentType ?? "").split(separator: ";").first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
        if essence.hasPrefix("video/") || essence.hasPrefix("audio/") || Self.playlistsAndContainers.contains(essence) {
            // Only the essence: parameters are not needed by players and could carry anything.
            self = essence.allSatisfy(Self.isTokenOrSlash) ? .media(essence) : .opaque
        } else if Self.pages.contains(essence) || essence.hasSuffix("+xml") || essence.hasSuffix("/xml")
            || essence.contains("script")
        {
            self = .page(essence)
        } else {
            self = .opaque
        }
    }

    private static let playlistsAndContainers: Set<String> = [
        "application/vnd.apple.mpegurl", "application/x-mpegurl", "application/dash+xml", "application/mp4",
        "application/ogg", "application/mp2t",
    ]

    private static let pages: Set<String> = ["text/html", "text/css", "text/xsl", "application/pdf"]

    private static func isTokenOrSlash(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || "/.+-_".contains(character))
    }
}
