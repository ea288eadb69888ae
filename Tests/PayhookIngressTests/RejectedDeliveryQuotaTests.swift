import Synchronization
import Testing
import PayhookTestSupport
@testable import PayhookIngress
@testable import PayhookCore

@Suite("Rejected-delivery quota")
struct RejectedDeliveryQuotaTests {
    /// A clock the test moves by hand.
    final class ManualClock: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { instant.withLock { $0 } }
        func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
    }

    func settings(burst: Int, perMinute: Int, total: Int, tracked: Int = 10_000) -> RejectedRecordingSettings {
        var settings = RejectedRecordingSettings()
        settings.perSourceBurst = burst
        settings.perSourcePerMinute = perMinute
        settings.totalPerSecond = total
        settings.trackedSources = tracked
        return settings
    }

    @Test("a source gets its burst, then its per-minute rate, exactly")
    func perSourceBucket() {
        let clock = ManualClock()
        let quota = RejectedDeliveryQuota(settings: settings(burst: 5, perMinute: 6, total: 1000)) { clock.now }
        let first = (0..<100).filter { _ in quota.admit(provider: .adyen, remoteAddress: "198.51.100.7") }.count
        #expect(first == 5)
        clock.advance(.seconds(30))  // 6 a minute: 3 tokens
        let later = (0..<100).filter { _ in quota.admit(provider: .adyen, remoteAddress: "198.51.100.7") }.count
        #expect(later == 3)
        clock.advance(.seconds(3600))  // never more than the burst
        #expect((0..<100).filter { _ in quota.admit(provider: .adyen, remoteAddress: "198.51.100.7") }.count == 5)
    }

    @Test("providers and addresses have buckets of their own; an IPv6 /64 is one source")
    func separateSources() {
        let clock = ManualClock()
        let quota = RejectedDeliveryQuota(settings: settings(burst: 2, perMinute: 0, total: 1000)) { clock.now }
        func admitted(_ provider: ProviderID, _ address: String) -> Int {
            (0..<10).filter { _ in quota.admit(provider: provider, remoteAddress: address) }.count
        }
        #expect(admitted(.adyen, "198.51.100.7") == 2)
        #expect(admitted(.pxp, "198.51.100.7") == 2)
        #expect(admitted(.adyen, "198.51.100.8") == 2)
        #expect(admitted(.adyen, "2001:db8:1:2::1") == 2)
        #expect(admitted(.adyen, "2001:db8:1:2:ffff::9") == 0)
        #expect(admitted(.adyen, "2001:db8:1:3::1") == 2)
        #expect(admitted(.adyen, "::ffff:198.51.100.7") == 0)
    }

    @Test("the shared bucket caps the rows of all sources together, but each new source's first refusal is written")
    func sharedBucket() {
        let clock = ManualClock()
        let quota = RejectedDeliveryQuota(settings: settings(burst: 100, perMinute: 6000, total: 10)) { clock.now }
        #expect((0..<50).filter { _ in quota.admit(provider: .adyen, remoteAddress: "203.0.113.1") }.count == 10)
        // Shared tokens are gone; a second source still has its first refusal written, no more.
        #expect((0..<5).filter { _ in quota.admit(provider: .adyen, remoteAddress: "203.0.113.2") }.count == 1)
        clock.advance(.milliseconds(500))
        let both = (0..<50).filter { index in
            quota.admit(provider: .adyen, remoteAddress: index % 2 == 0 ? "203.0.113.1" : "203.0.113.2")
        }.count
        #expect(both == 5)
    }

    @Test("at most trackedSources sources are remembered; idle ones are forgotten to make room")
    func boundedSources() {
        let clock = ManualClock()
        let quota = RejectedDeliveryQuota(settings: settings(burst: 2, perMinute: 60, total: 1000, tracked: 3)) { clock.now }
        for host in 1...3 { #expect(quota.admit(provider: .adyen, remoteAddress: "192.0.2.\(host)")) }
        #expect(!quota.admit(provider: .adyen, remoteAddress: "192.0.2.4"), "a fourth source while three are active")
        #expect(quota.trackedSourceCount == 3)
        clock.advance(.seconds(2))  // 1 a second refills the one token each spent
        #expect(quota.admit(provider: .adyen, remoteAddress: "192.0.2.4"))
        #expect(quota.trackedSourceCount == 1)
    }
}
