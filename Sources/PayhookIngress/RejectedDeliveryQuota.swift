import PayhookCore
import PayhookHTTP
import Synchronization

/// Decides which refused deliveries are written to `rejected_deliveries`: token buckets per
/// provider and client address, under one shared by all of them.
///
/// Why: every forged delivery used to become a row. A flood of wrongly signed deliveries from
/// one laptop wrote 198,250 rows (145 MB) in 10 s, about a terabyte a day. Forensics need the
/// first refusals of each source and a trickle after that, not every copy; the metrics count
/// every refusal regardless.
///
/// - A source seen for the first time (or again after it was forgotten) always has its first
///   refusal written, and starts with `perSourceBurst - 1` more.
/// - After that a row needs a token from the source's bucket (refilled at `perSourcePerMinute`)
///   and one from the shared bucket (`totalPerSecond`, holding at most one second's worth).
/// - So at most `totalPerSecond` rows a second are written, plus one per new source; at most
///   `trackedSources` sources are remembered, the ones with full buckets (idle) forgotten first.
///
/// A source is the client address; IPv6 addresses count per /64, the block one host usually has.
/// Thread-safe; the clock is injected so tests need not sleep.
package final class RejectedDeliveryQuota: Sendable {
    private struct Source: Hashable {
        let provider: ProviderID
        let address: [UInt8]
    }

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private struct State {
        var sources: [Source: Bucket] = [:]
        var shared: Bucket
    }

    private let settings: RejectedRecordingSettings
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state: Mutex<State>

    package init(settings: RejectedRecordingSettings, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.settings = settings
        self.now = now
        self.state = Mutex(State(shared: Bucket(tokens: Double(settings.totalPerSecond), updated: now())))
    }

    /// Whether this refusal from `remoteAddress` is to be written; takes its tokens if so.
    func admit(provider: ProviderID, remoteAddress: String) -> Bool {
        let instant = now()
        let source = Source(provider: provider, address: Self.sourceBytes(remoteAddress))
        let burst = Double(settings.perSourceBurst)
        let perSecond = Double(settings.perSourcePerMinute) / 60
        let total = Double(settings.totalPerSecond)
        return state.withLock { state in
            Self.refill(&state.shared, at: instant, rate: total, capacity: total)
            guard var bucket = state.sources[source] else {
                if state.sources.count >= settings.trackedSources {
                    Self.forgetIdle(&state.sources, at: instant, rate: perSecond, capacity: burst)
                }
                guard state.sources.count < settings.trackedSources else { return false }
                state.sources[source] = Bucket(tokens: burst - 1, updated: instant)
                state.shared.tokens = max(0, state.shared.tokens - 1)
                return true
            }
            Self.refill(&bucket, at: instant, rate: perSecond, capacity: burst)
            let admitted = bucket.tokens >= 1 && state.shared.tokens >= 1
            if admitted {
                bucket.tokens -= 1
                state.shared.tokens -= 1
            }
            state.sources[source] = bucket
            return admitted
        }
    }

    /// Sources remembered now (test hook).
    var trackedSourceCount: Int { state.withLock { $0.sources.count } }

    private static func refill(_ bucket: inout Bucket, at instant: ContinuousClock.Instant, rate: Double, capacity: Double) {
        guard instant > bucket.updated else { return }
        let elapsed = instant - bucket.updated
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        bucket.tokens = min(capacity, bucket.tokens + seconds * rate)
        bucket.updated = instant
    }

    /// Drops the sources whose buckets have refilled completely: they are no different from new.
    private static func forgetIdle(_ sources: inout [Source: Bucket], at instant: ContinuousClock.Instant, rate: Double, capacity: Double) {
        sources = sources.filter { _, bucket in
            var refilled = bucket
            refill(&refilled, at: instant, rate: rate, capacity: capacity)
            return refilled.tokens < capacity
        }
    }

    /// IPv4: the address; IPv4-mapped IPv6: the IPv4 address; IPv6: its /64; else the text.
    static func sourceBytes(_ address: String) -> [UInt8] {
        guard let bytes = AddressAllowList.addressBytes(address) else { return Array(address.utf8) }
        guard bytes.count == 16 else { return bytes }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
        return Array(bytes[0..<8])
    }
}
