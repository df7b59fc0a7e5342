import CCurl

/// vfetch's version, and the libcurl it was built against.
public enum Version {
    public static let vfetch = "0.2.0"
    /// From libcurl's headers at build time.
    public static let libcurl = LIBCURL_VERSION
}
