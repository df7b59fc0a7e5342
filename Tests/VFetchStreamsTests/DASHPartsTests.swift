import Foundation
import Testing

@testable import VFetchStreams

/// The pieces of the MPD reader: durations and dates, URL templates, content protection.
@Suite struct DASHPartsTests {
    @Test(arguments: [
        ("PT1H2M3.5S", 3723.5), ("P1DT1S", 86401), ("PT0S", 0), ("P0Y0M0DT0H0M10.000S", 10), ("PT6.0S", 6),
        ("PT212.534S", 212.534), ("P1W", 604_800), (" PT2M ", 120), ("P1Y", 31_536_000),
    ])
    func durations(_ text: String, _ seconds: Double) {
        #expect(MPDTime.duration(text) == seconds)
    }

    @Test(arguments: [
        "", "P", "PT", "P1DT", "1H", "PT1H2H", "PT2M1H", "PTS", "PT-1S", "-PT1S", "P1S", "PT1.2.3S", "PT1", "PT1e3S",
    ])
    func notDurations(_ text: String) {
        #expect(MPDTime.duration(text) == nil)
    }

    @Test func dates() throws {
        let midnight = 1_704_067_200.0  // 2024-01-01T00:00:00Z
        #expect(MPDTime.date("2024-01-01T00:00:00Z")?.timeIntervalSince1970 == midnight)
        #expect(MPDTime.date("2024-01-01T00:00:00.5Z")?.timeIntervalSince1970 == midnight + 0.5)
        // No zone: UTC, as players take it.
        #expect(MPDTime.date("2024-01-01T00:00:00")?.timeIntervalSince1970 == midnight)
        #expect(MPDTime.date("2024-01-01T01:00:00+01:00")?.timeIntervalSince1970 == midnight)
        #expect(MPDTime.date("yesterday") == nil)
        #expect(MPDTime.date("") == nil)
    }

    @Test func templatesFillTheirFields() throws {
        let template = try DASHURLTemplate("$RepresentationID$/$Number%05d$-$Time$-$Bandwidth%09d$.m4s?a=$$1")
        #expect(
            try template.expand(representationID: "v1", number: 42, time: 12_345_678_901, bandwidth: 128_000)
                == "v1/00042-12345678901-000128000.m4s?a=$1")
        #expect(template.uses(.time) && template.uses(.number))
        #expect(
            try DASHURLTemplate("$$Number$$").expand(representationID: "", number: 1, time: 0, bandwidth: nil)
                == "$Number$")
        #expect(
            try DASHURLTemplate("$Number%d$").expand(representationID: "", number: 7, time: 0, bandwidth: nil) == "7")
        // A width narrower than the number does not cut it.
        #expect(
            try DASHURLTemplate("$Number%02d$").expand(representationID: "", number: 12345, time: 0, bandwidth: nil)
                == "12345")
        #expect(!(try DASHURLTemplate("init.mp4")).uses(.number))
    }

    @Test(arguments: [
        "$Foo$", "$SubNumber$", "$Number", "a$b", "$Number%5d$", "$Number%0100d$", "$Number%05x$", "$Time%-5d$",
    ])
    func templatesThatAreNotRead(_ text: String) {
        #expect(throws: StreamParseError.self) { try DASHURLTemplate(text) }
    }

    @Test func aBandwidthFieldNeedsABandwidth() throws {
        #expect(throws: StreamParseError.self) {
            try DASHURLTemplate("$Bandwidth$").expand(representationID: "a", number: 1, time: 0, bandwidth: nil)
        }
    }

    @Test func contentProtectionNamesTheSchemeAndTheSystems() {
        func element(_ scheme: String, _ value: String? = nil) -> MPDElement {
            MPDElement(
                name: "ContentProtection",
                attributes: ["schemeIdUri": scheme].merging(value.map { ["value": $0] } ?? [:]) { $1 })
        }
        #expect(DASHContentProtection.encryption([]) == .none)
        #expect(
            DASHContentProtection.encryption([element("urn:mpeg:dash:mp4protection:2011", "cenc")])
                == .unsupported("cenc"))
        #expect(DASHContentProtection.encryption([element("urn:mpeg:dash:mp4protection:2011")]) == .unsupported("cenc"))
        #expect(
            DASHContentProtection.encryption([
                element("urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"),
                element("urn:uuid:9A04F079-9840-4286-AB92-E65BE0885F95"),
            ]) == .unsupported("Widevine, PlayReady"))
        #expect(DASHContentProtection.encryption([element("urn:example:drm")]) == .unsupported("urn:example:drm"))
    }
}
