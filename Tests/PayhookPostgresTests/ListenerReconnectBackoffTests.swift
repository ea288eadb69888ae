@testable import PayhookPostgres
import Testing

@Suite("Listener reconnect backoff")
struct ListenerReconnectBackoffTests {
    @Test("a failed connect or LISTEN pauses 50 ms, doubling to 1 s, without jitter")
    func delays() {
        let pauses = (1...8).map {
            Int((ListenerWorker.reconnectBackoff.delay(afterAttempt: $0, unitRandom: 0) / .milliseconds(1)).rounded())
        }
        #expect(pauses == [50, 100, 200, 400, 800, 1000, 1000, 1000])
    }
}
