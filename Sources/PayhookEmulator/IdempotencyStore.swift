import Foundation

/// Charge results by idempotency key, as a provider keeps them: the first request with a key
/// executes and its answer is stored; later requests with the same key and the same body get
/// the stored answer without executing again, until the key expires.
///
/// Real providers forget keys: Adyen keeps one for at least 7 days, Mercado Pago for a window
/// it does not publish (payhook's `PAYHOOK_MERCADOPAGO_IDEMPOTENCY_WINDOW`). After ``window``
/// (or ``forgetAll()``) the same key and body execute a NEW charge, which is what a client
/// that resends too late causes in production.
///
/// Not thread-safe on its own; kept inside the provider emulator's `Mutex`, so a check and the
/// execution that follows it are one step and two concurrent first requests execute once.
struct IdempotencyStore {
    struct Entry {
        let fingerprint: [UInt8]
        let status: Int
        let body: [UInt8]
        let storedAt: Date
        var replays: Int
    }

    enum Lookup {
        case absent
        case replay(status: Int, body: [UInt8])
        /// The key was used before with a different request body.
        case conflict
    }

    /// How long a key is remembered after its charge executed; nil keeps keys forever.
    var window: Duration?
    /// The clock the window is measured with.
    var now: @Sendable () -> Date = { Date() }
    private var entries: [String: Entry] = [:]
    /// Executions and replays per key, kept across expiry so tests can count both charges.
    private var executionCounts: [String: Int] = [:]
    private var replayCounts: [String: Int] = [:]

    init(window: Duration? = nil) { self.window = window }

    mutating func lookup(_ key: String, fingerprint: [UInt8]) -> Lookup {
        guard let entry = entries[key] else { return .absent }
        if let window, now().timeIntervalSince(entry.storedAt) >= Self.seconds(window) {
            entries[key] = nil
            return .absent
        }
        guard entry.fingerprint == fingerprint else { return .conflict }
        entries[key]?.replays += 1
        replayCounts[key, default: 0] += 1
        return .replay(status: entry.status, body: entry.body)
    }

    mutating func store(_ key: String, fingerprint: [UInt8], status: Int, body: [UInt8]) {
        executionCounts[key, default: 0] += 1
        entries[key] = Entry(fingerprint: fingerprint, status: status, body: body, storedAt: now(), replays: 0)
    }

    /// Expires every key at once, as if the window had passed for all of them.
    mutating func forgetAll() { entries.removeAll() }

    func executions(_ key: String) -> Int { executionCounts[key] ?? 0 }

    func replays(_ key: String) -> Int { replayCounts[key] ?? 0 }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
