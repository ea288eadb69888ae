import PayhookCore
import Synchronization

/// The emulator's request log, shared by the server handler and the provider emulators.
///
/// Bounded, so the long-running `payhook-emulator` cannot grow without limit: when full, the
/// oldest tenth is dropped at once (one array shift per `capacity / 10` requests rather than
/// one per request, which a bench at thousands of requests a second would feel).
final class RequestLog: Sendable {
    private let entries = Mutex<[EmulatedRequest]>([])
    let capacity: Int

    init(capacity: Int = 10_000) { self.capacity = capacity }

    func append(_ request: EmulatedRequest) {
        entries.withLock { entries in
            if entries.count >= capacity {
                entries.removeFirst(min(entries.count, entries.count - capacity + max(1, capacity / 10)))
            }
            entries.append(request)
        }
    }

    var all: [EmulatedRequest] { entries.withLock { $0 } }

    func count(provider: ProviderID, endpoint: String, id: String?) -> Int {
        entries.withLock { entries in
            entries.reduce(0) { total, entry in
                let matches = entry.provider == provider && entry.endpoint == endpoint && (id == nil || entry.resourceID == id)
                return total + (matches ? 1 : 0)
            }
        }
    }

    func removeAll() { entries.withLock { $0.removeAll() } }
}
