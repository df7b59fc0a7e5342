import Foundation

/// Whether `url` is something vfetch can fetch: an http or https URL with a host.
package func isFetchableURL(_ url: String) -> Bool {
    guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else { return false }
    return (scheme == "http" || scheme == "https") && components.host?.isEmpty == false
}
