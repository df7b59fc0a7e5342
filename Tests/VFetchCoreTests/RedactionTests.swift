import Testing

@testable import VFetchCore

@Suite struct RedactionTests {
    @Test(arguments: [
        ("https://ann:s3cret@example.com/v.mp4", "https://ann:***@example.com/v.mp4"),
        ("http://ann:s3cret@127.0.0.1:8080", "http://ann:***@127.0.0.1:8080"),
        ("https://:s3cret@example.com/v.mp4", "https://:***@example.com/v.mp4"),
        ("https://s3cret@example.com/v.mp4", "https://***@example.com/v.mp4"),
        ("https://ann:s3cret:more@example.com/", "https://ann:***@example.com/"),
        ("https://ann:p%40ss@example.com/a@b", "https://ann:***@example.com/a@b"),
        ("https://ann:p@ss@example.com/", "https://ann:***@example.com/"),
        ("HTTPS://ann:s3cret@example.com?q=1", "HTTPS://ann:***@example.com?q=1"),
        ("https://@example.com/", "https://@example.com/"),
    ])
    func passwordsOfURLs(url: String, shown: String) {
        #expect(redactedURL(url) == shown)
    }

    @Test func leavesOtherURLsAsTheyAre() {
        for url in [
            "https://example.com/v.mp4", "https://example.com/a@b.mp4", "https://example.com/v?mail=a@b.c",
            "https://example.com/v#a@b",
            "https://cdn.example.com/v.mp4?X-Amz-Signature=abc&Expires=1",  // signed URLs stay whole
            "not a URL", "", "a@b", "://@",
        ] {
            #expect(redactedURL(url) == url)
        }
    }

    @Test func everyURLInAMessage() {
        let message = "bad URL: http://ann:one@a.example/x (libcurl: https://bob:two@b.example?y), \"ftp://three@c\""
        #expect(
            redactingCredentials(in: message)
                == "bad URL: http://ann:***@a.example/x (libcurl: https://bob:***@b.example?y), \"ftp://***@c\"")
        #expect(
            redactingCredentials(in: "mail ann@example.com about http://example.com/") == "mail ann@example.com about http://example.com/")
    }

    @Test func aURIOfMegabytesIsCutToItsStart() {
        let uri = "http://ann:pw@example.com/" + String(repeating: "a", count: 1 << 20)
        let shown = redactingCredentials(in: "segment unavailable: \(uri): HTTP 404")
        #expect(shown.utf8.count < 2 * longestShownRun)
        #expect(shown.hasPrefix("segment unavailable: http://ann:***@example.com/aaa"))
        // The run ends at the space: the redacted password is one byte longer, and the colon goes too.
        #expect(shown.hasSuffix("aaa…(\(uri.utf8.count + 2 - longestShownRun / 2) more bytes) HTTP 404"))
        let signed = "https://cdn.example.com/v.mp4?X-Amz-Signature=" + String(repeating: "f", count: 1500)
        #expect(redactingCredentials(in: "from \(signed)  and\tmore") == "from \(signed)  and\tmore")
    }

    @Test(arguments: [
        ("Authorization: Bearer s3cret", "Authorization: ***"),
        ("authorization:Basic czNjcmV0", "authorization: ***"),
        ("Proxy-Authorization: Basic czNjcmV0", "Proxy-Authorization: ***"),
        ("COOKIE: session=s3cret", "COOKIE: ***"),
        ("Set-Cookie: id=s3cret; HttpOnly", "Set-Cookie: ***"),
        (" Cookie : a=b", " Cookie : ***"),
        ("Referer: https://example.com/", "Referer: https://example.com/"),
        ("X-Authorization-Hint: visible", "X-Authorization-Hint: visible"),
        ("no colon here", "no colon here"),
    ])
    func credentialHeaders(line: String, shown: String) {
        #expect(redactedHeader(line) == shown)
    }
}
