import Foundation
import PayhookCore
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookOperations
import Synchronization

/// The failure policy: retry with backoff, or dead with a dead letter.
extension InboundEventProcessor {
    /// Counts a failed attempt: a retry with backoff, or a dead event with its dead letter.
    /// - Returns: `true` when the event is now dead.
    func recordFailure(_ event: ClaimedInboundEvent, _ failure: ProcessingFailure, at time: Date,
                               on connection: PostgresConnection) async throws -> Bool {
        let attempt = event.attempts + 1
        let fields: [String: LogValue] = [
            "inbound_event.id": .int(event.id), "provider": .string(event.providerText),
            "inbound_event.attempt": .init(attempt), "error": .string(failure.message),
        ]
        if failure.retryable, !settings.isExhausted(afterAttempt: attempt) {
            let due = settings.nextAttempt(after: attempt, now: time, jitter: jitter())
            try await connection.query(ProcessingSQL.shared.scheduleRetry, [
                .int(event.id), .int(Int64(attempt)), .timestamptz(due), .text(failure.message),
            ])
            logger.warning("inbound event failed; will retry", fields)
            return false
        }
        let reason = failure.reason
        try await connection.query(ProcessingSQL.shared.markDead, [.int(event.id), .int(Int64(attempt)), .text(failure.message)])
        try await DeadLetterStore.openForInboundEvent(id: event.id, provider: event.providerText, reason: reason,
                                                      error: failure.message, on: connection)
        logger.error("inbound event dead-lettered", fields.merging(["reason": .string(reason.rawValue)]) { $1 })
        return true
    }

    /// After a batch failed as a whole, counts an attempt against each claimed row in a fresh
    /// transaction, so that an event which breaks its batch every time still ends up dead.
    func recordBatchFailure(_ claimed: [ClaimedInboundEvent], error: any Error) async {
        let failure = ProcessingFailure.database(error)
        let time = now()
        do {
            try await pool.transaction { connection in
                for event in claimed {
                    _ = try await self.recordFailure(event, failure, at: time, on: connection)
                }
            }
        } catch {
            logger.warning("could not record the failed batch; its events stay pending",
                           ["error": .string(String(describing: error))])
        }
    }
}
