/// Whether an IP address is on the public internet, for serve's rule that a web page's request
/// never reaches this machine, the local network or link-local services through it.
package enum NetworkAddress {
    /// An IPv4 address (4 bytes, network order) is public unless it is this network, private,
    /// shared (carrier NAT), loopback, link-local, benchmarking, multicast or reserved.
    package static func isPublic(ipv4 a: [UInt8]) -> Bool {
        guard a.count == 4 else { return false }
        switch (a[0], a[1]) {
        case (0, _), (10, _), (127, _), (169, 254), (192, 168), (198, 18), (198, 19): return false
        case (172, 16...31), (100, 64...127): return false
        case (224..., _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    /// An IPv6 address (16 bytes) is public when it is global unicast (2000::/3) and not the
    /// documentation prefix; an IPv4-mapped or NAT64 one is judged by its IPv4 address.
    package static func isPublic(ipv6 a: [UInt8]) -> Bool {
        guard a.count == 16 else { return false }
        if a[0..<10].allSatisfy({ $0 == 0 }) && a[10] == 0xFF && a[11] == 0xFF { return isPublic(ipv4: Array(a[12...])) }
        if a[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return isPublic(ipv4: Array(a[12...])) }
        if a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0D && a[3] == 0xB8 { return false }
        return a[0] & 0xE0 == 0x20
    }
}
