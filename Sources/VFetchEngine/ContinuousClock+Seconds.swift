extension ContinuousClock.Instant {
    /// Seconds from this instant to now, as the engines' loops count time.
    package var secondsAgo: Double {
        let elapsed = ContinuousClock.now - self
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    }
}
