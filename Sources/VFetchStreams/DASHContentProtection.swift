import Foundation

/// What DASH `ContentProtection` descriptors say about a Representation's media: any of them means
/// it is encrypted (Common Encryption under a DRM system), which vfetch cannot undo.
enum DASHContentProtection {
    /// DRM systems by the UUID in their `schemeIdUri` (`urn:uuid:…`), as dashif.org lists them.
    static let systems: [String: String] = [
        "edef8ba9-79d6-4ace-a3c8-27dcd51d21ed": "Widevine",
        "9a04f079-9840-4286-ab92-e65be0885f95": "PlayReady",
        "94ce86fb-07ff-4f43-adb8-93d2fa968ca2": "FairPlay",
        "e2719d58-a985-b3c9-781a-b030af78d30e": "ClearKey",
        "1077efec-c0b2-4d02-ace3-3c1e52e2fb4b": "ClearKey",
        "f239e769-efa3-4850-9c16-a903c6932efb": "Adobe Primetime",
        "3d5e6d35-9b9a-41e8-b843-dd3c6e72c42c": "ChinaDRM",
    ]

    static let mp4Protection = "urn:mpeg:dash:mp4protection:2011"

    /// The encryption `descriptors` (the ContentProtection elements of an AdaptationSet and of its
    /// Representation) declare: `.none` when there are none, else `.unsupported` naming the
    /// scheme and the DRM systems, e.g. `cenc (Widevine, PlayReady)`.
    static func encryption(_ descriptors: [MPDElement]) -> SegmentEncryption {
        guard !descriptors.isEmpty else { return .none }
        var scheme: String?
        var names: [String] = []
        for descriptor in descriptors {
            let uri = (descriptor["schemeIdUri"] ?? "").trimmingCharacters(in: .whitespaces).lowercased()
            let name: String
            if uri == mp4Protection {
                let value = (descriptor["value"] ?? "").trimmingCharacters(in: .whitespaces)
                scheme = scheme ?? (value.isEmpty ? "cenc" : value)
                continue
            } else if uri.hasPrefix("urn:uuid:") {
                let uuid = String(uri.dropFirst("urn:uuid:".count))
                name = systems[uuid] ?? uuid
            } else {
                name = uri.isEmpty ? "ContentProtection" : uri
            }
            if !names.contains(name) { names.append(name) }
        }
        switch (scheme, names.isEmpty) {
        case (let scheme?, true): return .unsupported(scheme)
        case (let scheme?, false): return .unsupported("\(scheme) (\(names.joined(separator: ", ")))")
        case (nil, _): return .unsupported(names.joined(separator: ", "))
        }
    }
}
