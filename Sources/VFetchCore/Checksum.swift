/// The digest a `sha256=HEX` checksum names (either case), in lowercase hex; nil when the text is not
/// such a checksum.
package func sha256Digest(fromChecksum checksum: String) -> String? {
    let parts = checksum.split(separator: "=", maxSplits: 1)
    guard parts.count == 2, parts[0].lowercased() == "sha256", parts[1].count == 64, parts[1].allSatisfy(\.isHexDigit)
    else { return nil }
    return parts[1].lowercased()
}
