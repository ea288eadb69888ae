/// Charge results by idempotency key, as a provider keeps them: the first request with a key
/// executes and its answer is stored; later requests with the same key and the same body get
/// the stored answer without executing again.
///
/// Not thread-safe on its own; kept inside the provider emulator's `Mutex`, so a check and the
/// execution that follows it are one step and two concurrent first requests execute once.
struct IdempotencyStore {
    struct Entry {
        let fingerprint: [UInt8]
        let status: Int
        let body: [UInt8]
        var executions: Int
        var replays: Int
    }

    enum Lookup {
        case absent
        case replay(status: Int, body: [UInt8])
        /// The key was used before with a different request body.
        case conflict
    }

    private var entries: [String: Entry] = [:]

    mutating func lookup(_ key: String, fingerprint: [UInt8]) -> Lookup {
        guard var entry = entries[key] else { return .absent }
        guard entry.fingerprint == fingerprint else { return .conflict }
        entry.replays += 1
        entries[key] = entry
        return .replay(status: entry.status, body: entry.body)
    }

    mutating func store(_ key: String, fingerprint: [UInt8], status: Int, body: [UInt8]) {
        let executions = (entries[key]?.executions ?? 0) + 1
        entries[key] = Entry(fingerprint: fingerprint, status: status, body: body, executions: executions, replays: 0)
    }

    func executions(_ key: String) -> Int { entries[key]?.executions ?? 0 }

    func replays(_ key: String) -> Int { entries[key]?.replays ?? 0 }
}
