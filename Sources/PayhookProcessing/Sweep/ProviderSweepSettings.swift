import Foundation

/// When the provider sweep looks for what providers never sent (docs/configuration.md).
public struct ProviderSweepSettings: Sendable, Equatable {
    public init() {}

    /// How often each process with the `scheduler` role sweeps (`PAYHOOK_SWEEP_INTERVAL_SECONDS`);
    /// `nil` turns the sweep off.
    public var interval: Duration? = .seconds(300)
    /// A registered order still unpaid this long after registration is looked up, then expires
    /// (`PAYHOOK_SWEEP_ORDER_DEADLINE`).
    public var orderDeadline: Duration = .seconds(86_400)
    /// A `pending` payment unchanged this long is looked up (`PAYHOOK_SWEEP_PENDING_AFTER`).
    public var pendingAfter: Duration = .seconds(3_600)
    /// An `authorized` payment unchanged this long has outlived its authorisation
    /// (`PAYHOOK_SWEEP_AUTHORIZATION_LIFETIME`): Adyen's card authorisations last days to weeks
    /// by scheme, so the default is the shortest common one.
    public var authorizationLifetime: Duration = .seconds(7 * 86_400)
    /// A charge `pending` this long after its first call has used up its own re-checks
    /// (`PAYHOOK_CHARGE_PENDING_RECHECK_SECONDS` × `PAYHOOK_CHARGE_PENDING_CHECKS`; set by the
    /// composition root from those).
    public var chargePendingAfter: Duration = .seconds(900 * 96)
    /// How long after one lookup the same subject is looked up again (`PAYHOOK_SWEEP_RECHECK`).
    public var recheck: Duration = .seconds(6 * 3_600)
    /// Subjects of each kind handled per sweep.
    public var batchSize: Int = 200
    /// Send `order.expired` when a registered order expires unpaid
    /// (`PAYHOOK_CALLBACK_ORDER_EXPIRED=true`); off by default, because a merchant that does not
    /// know the type might treat it as an error.
    public var notifyOrderExpired = false
}
