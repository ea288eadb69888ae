/// How long payhook keeps deliveries it no longer needs, from the environment (parsed with
/// the rest of the configuration, in PayhookApp's `RetentionPolicy+Parse.swift`).
///
/// `PAYHOOK_RETENTION_DAYS` (default 30, at least `minimumInboundDays`) for processed
/// `inbound_events`, `PAYHOOK_PAYMENT_EVENT_RETENTION_DAYS` (default 730) for `payment_events`,
/// `PAYHOOK_REJECTED_RETENTION_DAYS` (default 7) for `rejected_deliveries`,
/// `PAYHOOK_JOB_RETENTION_DAYS` (default 7) for succeeded and cancelled `jobs`, 0 keeping them
/// forever; `PAYHOOK_RETENTION_INTERVAL_SECONDS` (default 600) between sweeps;
/// `PAYHOOK_RETENTION_PAUSE_PERCENT` (default 100) for `pausePercent`.
package struct RetentionPolicy: Sendable, Equatable {
    package init(interval: Duration = .seconds(600)) {
        self.interval = interval
    }

    /// The longest a provider keeps retrying one delivery: Adyen's retry queue runs for up to 30
    /// days (Mercado Pago retries for days, PXP for seconds). Deduplication is the inbox's unique
    /// key, so a delivery must stay at least this long: a retry of one that retention had deleted
    /// would be stored and processed again. Ages are measured from `received_at`, the first
    /// receipt, which is no earlier than the provider's first attempt; the ingress and the sweeper
    /// read their hosts' clocks, which are assumed synchronized.
    package static let minimumInboundDays = 30

    package var processedInboundDays = 30
    /// History only: current state lives in `payments`, `orders` and `vault_tokens`, and refund
    /// and dispute references in `payment_adjustments`, which retention never touches. Two years
    /// outlast the card schemes' longest dispute windows, for the people reading the history.
    package var paymentEventDays = 730
    package var rejectedDays = 7
    /// Succeeded and cancelled jobs. Safe to forget: every handler is idempotent on its
    /// business key (a fulfilled order, a delivered callback, a settled charge), so a job
    /// enqueued again once its old row is gone finds the work done.
    package var finishedJobDays = 7
    package var interval: Duration = .seconds(600)
    /// Rows per DELETE: short transactions, so no lock is held long on a busy table.
    package var batchSize = 1000
    /// After each batch the sweeper waits this share of the time the batch took (100: as long
    /// again), so a sweep holds a connection and a backend's CPU at most about half the time.
    /// Why: retention is never urgent, but the first sweep after months of history (an upgrade, a
    /// shorter retention) deletes hundreds of thousands of rows as fast as the database allows,
    /// beside ingest. Later sweeps delete one interval's traffic, so the pause costs them nothing.
    /// bench/retention runs a sweep with and without it.
    package var pausePercent = 100
}
