/// One request the origin received, with the status it answered.
public struct OriginRequest: Sendable {
    /// The request method, e.g. "GET".
    public var method: String
    /// The path as requested (including `/redirect/…` or `/s/…` prefixes), without the query.
    public var path: String
    /// All request headers, in the order received.
    public var headers: [(String, String)]
    /// The 1-based accept order of the TCP connection the request came on.
    public var connection: Int
    /// The status code answered.
    public var status: Int

    /// Memberwise initializer.
    public init(method: String, path: String, headers: [(String, String)], connection: Int, status: Int) {
        self.method = method
        self.path = path
        self.headers = headers
        self.connection = connection
        self.status = status
    }

    /// The first value of the header `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.0.lowercased() == wanted }?.1
    }
}
