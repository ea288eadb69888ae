package import Foundation
package import PayhookPostgres
package import PayhookAdmin

/// Re-runs normalization over deliveries already processed, e.g. after a mapping bug fix.
///
/// It only sets `processed` rows back to `pending`; the processors do the rest. That is safe
/// because processing is idempotent: a delivery whose effects were applied changes nothing
/// twice. Rows are updated in small batches so processors and ingress never wait long on locks.
package struct InboundReprocessing: Sendable {
    package init(pool: PostgresPool) {
        self.pool = pool
    }

    let pool: PostgresPool
    /// Rows per UPDATE.
    var batchSize = 1000

    /// What a reprocess would touch.
    package struct Selection: Sendable {
        package let count: Int64
        let oldest: Date?
        let newest: Date?
    }

    /// Processed deliveries of `provider` received at or after `since`.
    package func count(provider: String, since: Date) async throws(OperationsError) -> Selection {
        do {
            let row = try await pool.query(OperationsSQL.shared.countReprocessable, [.text(provider), .timestamptz(since)]).rows.first
            return Selection(count: try row?.decode("n") ?? 0, oldest: try row?.decode("oldest"), newest: try row?.decode("newest"))
        } catch {
            throw OperationsError.wrapping(error)
        }
    }

    /// Sets the matching processed rows back to `pending` (attempts 0, due now) and audits it.
    ///
    /// The run's start is read from the database clock (which writes `processed_at`) and bounds
    /// both what was received and what was processed, so rows the processors finish again while
    /// this runs are not picked up a second time. The audit row is written first: an interrupted
    /// run is still on record.
    /// - Returns: how many rows were set pending.
    package func execute(provider: String, since: Date, by action: OperatorAction) async throws(OperationsError) -> Int64 {
        do {
            guard let until = try await pool.query(OperationsSQL.shared.databaseNow).rows.first?.decode("now", as: Date.self) else {
                throw OperationsError(.databaseUnavailable, "the database did not answer its clock")
            }
            let planned = try await count(provider: provider, since: since)
            try await pool.withConnection { connection in
                try await AuditTrail.record(
                    on: connection, by: action, action: "inbound.reprocess", target: "inbound_events:\(provider)",
                    details: [
                        .init("provider", .string(provider)), .init("since", .timestamp(since)), .init("until", .timestamp(until)),
                        .init("planned", .int(planned.count)), .init("note", .optional(action.note)),
                    ] + action.context)
            }
            var total: Int64 = 0
            while true {
                let batch = try await pool.query(OperationsSQL.shared.reprocessBatch, [
                    .text(provider), .timestamptz(since), .timestamptz(until), .int(Int64(batchSize)),
                ]).affectedRows
                total += Int64(batch)
                if batch < batchSize { return total }
            }
        } catch {
            throw OperationsError.wrapping(error)
        }
    }
}
