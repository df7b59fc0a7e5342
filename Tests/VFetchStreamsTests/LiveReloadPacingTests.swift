import Testing

@testable import VFetchStreams

@Suite struct LiveReloadPacingTests {
    @Test func aTargetDurationOfZeroIsReadOnceASecondAtMost() {
        var pacing = LiveReloadPacing(targetDuration: 0)
        #expect(pacing.interval == LiveReloadPacing.floor)
        for changed in [true, false, true] {
            pacing.reloaded(targetDuration: 0, changed: changed)
            #expect(pacing.interval == LiveReloadPacing.floor)
        }
        pacing.reloaded(targetDuration: -5, changed: true)
        #expect(pacing.interval == LiveReloadPacing.floor)
        pacing.reloaded(targetDuration: .nan, changed: false)
        #expect(pacing.interval == LiveReloadPacing.floor)
    }

    @Test func aTargetDurationAfterNewSegmentsAndHalfOneWithout() {
        var pacing = LiveReloadPacing(targetDuration: 6)
        #expect(pacing.interval == 6)
        pacing.reloaded(targetDuration: 6, changed: false)
        #expect(pacing.interval == 3)
        pacing.reloaded(targetDuration: nil, changed: true)
        #expect(pacing.interval == 6, "a list without a target keeps the last one")
        pacing.reloaded(targetDuration: 1, changed: false)
        #expect(pacing.interval == LiveReloadPacing.floor, "half of one second is below the floor")
        #expect(LiveReloadPacing(targetDuration: nil).interval == LiveReloadPacing.defaultTarget)
    }
}
