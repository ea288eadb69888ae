package import Foundation
package import PayhookCore
package import PayhookPostgres

/// What features built on processing do inside the processor's transaction.
///
/// It lives in the ledger, below processing and the features that react to it, so that
/// processing runs the hooks and each feature supplies its own without either depending on the
/// other: fulfillment supplies `ProcessingHooks.fulfillment(_:pool:)` (`PayhookProcessing`),
/// `PayhookSubscriptions` supplies `ProcessingHooks.subscriptions`, and the composition root
/// chains them with ``then(_:)``. Each hook runs on the processor's connection: what it writes
/// commits or rolls back with the batch.
package struct ProcessingHooks: Sendable {
    /// After a vault token row is written, while the processor holds the row `FOR UPDATE`.
    package var tokenStatusChanged: @Sendable (_ tokenID: Int64, _ status: VaultTokenStatus, _ occurredAt: Date?,
                                               _ connection: PostgresConnection) async throws -> Void
    /// After a batch is applied, before the batch is marked processed. What it returns goes into
    /// the batch's outcome (`BatchOutcome` in `PayhookProcessing`).
    package var afterBatch: @Sendable (_ touched: TouchedRows,
                                       _ connection: PostgresConnection) async throws -> AfterBatchReport

    package init(
        tokenStatusChanged: @escaping @Sendable (Int64, VaultTokenStatus, Date?, PostgresConnection) async throws -> Void,
        afterBatch: @escaping @Sendable (TouchedRows, PostgresConnection) async throws -> AfterBatchReport
    ) {
        self.tokenStatusChanged = tokenStatusChanged
        self.afterBatch = afterBatch
    }

    /// Nothing reacts to processing.
    package static let none = ProcessingHooks(tokenStatusChanged: { _, _, _, _ in }, afterBatch: { _, _ in AfterBatchReport() })

    /// These hooks, then `next`'s, on the same connection and in the same transaction; the
    /// reports add up. The composition root chains the features this way (fulfillment first,
    /// then subscriptions, the order they have always run in).
    package func then(_ next: ProcessingHooks) -> ProcessingHooks {
        let first = self
        return ProcessingHooks(
            tokenStatusChanged: { tokenID, status, occurredAt, connection in
                try await first.tokenStatusChanged(tokenID, status, occurredAt, connection)
                try await next.tokenStatusChanged(tokenID, status, occurredAt, connection)
            },
            afterBatch: { touched, connection in
                let earlier = try await first.afterBatch(touched, connection)
                let later = try await next.afterBatch(touched, connection)
                return AfterBatchReport(overpayments: earlier.overpayments + later.overpayments)
            })
    }
}

/// What a feature's ``ProcessingHooks/afterBatch`` did that the processor reports in its
/// batch outcome (and so in `/metrics`).
package struct AfterBatchReport: Sendable, Equatable {
    /// Payments newly reported to merchants as `order.overpaid` (`BatchOutcome.overpayments`).
    package var overpayments: Int

    package init(overpayments: Int = 0) {
        self.overpayments = overpayments
    }
}
