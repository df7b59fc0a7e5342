import Foundation

/// Whether `url` is something vfetch can fetch: an http or https URL with a host.
package func isFetchableURL(_ url: String) -> Bool {
    guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else { return false }
    return (scheme == "http" || scheme == "https") && components.host?.isEmpty == false
}

/// `text` percent-encoded as a query value or a fragment's: everything but RFC 3986's unreserved characters,
/// so its own `&`, `=`, `+` and `#` stay in the one value.
package func percentEncodedValue(_ text: String) -> String {
    text.addingPercentEncoding(withAllowedCharacters: unreservedCharacters) ?? ""
}

private let unreservedCharacters = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
