import PayhookAdmin
import PayhookConsole
import PayhookIngress
import PayhookLedger
import PayhookOperations
package import PayhookPostgres
import PayhookProcessing
import PayhookQueue
import PayhookSubscriptions
import PayhookCallbacks

/// Every named SQL statement payhook runs: the one list of statement sets, each of which lists
/// its own statements (`SQLStatementSet`).
///
/// One test prepares everything here against the migrated schema, so a renamed column fails a
/// fast test instead of a 3 a.m. replay. A statement added to a set needs no edit here; a new
/// set does, and its statements are otherwise prepared by no test.
package enum SQLStatementCatalog {
    /// The sets, in the order data flows: ingress, processing, jobs, subscriptions, operations, console.
    package static let sets: [any SQLStatementSet.Type] = [
        InboundEventSQL.self,
        LedgerSQL.self, ProcessingSQL.self, OrderSQL.self, FulfillmentSQL.self, CallbackSQL.self, SweepSQL.self,
        JobSQL.self,
        SubscriptionSQL.self,
        VaultTokenSQL.self,
        OperationsSQL.self, RetentionSQL.self, AuditSQL.self,
        ConsoleSQL.self, ConsoleChartSQL.self,
    ]

    /// Every statement of every set, named `Type.property`.
    package static var statements: [(name: String, sql: String)] { sets.flatMap { $0.statements } }
}
