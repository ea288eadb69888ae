import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PayhookPostgres
import PayhookTestSupport
import Synchronization
import Testing

/// Collects a listener's notifications so tests can wait for them with a deadline.
final class NotificationRecorder: Sendable {
    private final class Storage: Sendable {
        let items = Mutex<[PostgresNotification]>([])
    }
    private let storage = Storage()
    private let consumer: Task<Void, Never>
    /// Opens when the listener's stream has finished.
    let finished = Latch()

    init(_ listener: PostgresListener) {
        let stream = listener.notifications
        let storage = self.storage
        let finished = self.finished
        consumer = Task {
            for await notification in stream { storage.items.withLock { $0.append(notification) } }
            finished.open()
        }
    }

    var all: [PostgresNotification] { storage.items.withLock { $0 } }

    func count(channel: String) -> Int { all.filter { $0.channel == channel }.count }

    func cancel() { consumer.cancel() }
}
