package import Foundation
package import PayhookCore
package import PayhookPostgres

/// What features built on processing do inside the processor's transaction.
///
/// The composition root wires them (`PayhookSubscriptions` supplies ``subscriptions``), so
/// processing does not depend on the features that react to it. Each hook runs on the
/// processor's connection: what it writes commits or rolls back with the batch.
package struct ProcessingHooks: Sendable {
    /// After a vault token row is written, while the processor holds the row `FOR UPDATE`.
    package var tokenStatusChanged: @Sendable (_ tokenID: Int64, _ status: VaultTokenStatus, _ occurredAt: Date?,
                                               _ connection: PostgresConnection) async throws -> Void
    /// After a batch is applied and its fulfillment follow-ups are queued, before the batch is
    /// marked processed.
    package var afterBatch: @Sendable (_ touched: CanonicalEventApplier.TouchedRows,
                                       _ connection: PostgresConnection) async throws -> Void

    package init(
        tokenStatusChanged: @escaping @Sendable (Int64, VaultTokenStatus, Date?, PostgresConnection) async throws -> Void,
        afterBatch: @escaping @Sendable (CanonicalEventApplier.TouchedRows, PostgresConnection) async throws -> Void
    ) {
        self.tokenStatusChanged = tokenStatusChanged
        self.afterBatch = afterBatch
    }

    /// Nothing reacts to processing.
    package static let none = ProcessingHooks(tokenStatusChanged: { _, _, _, _ in }, afterBatch: { _, _ in })
}
