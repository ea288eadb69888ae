import Foundation
import PayhookProcessing
import PayhookSubscriptions

extension EnvironmentReader {
    /// `PAYHOOK_SWEEP_*` and `PAYHOOK_CALLBACK_ORDER_EXPIRED`; defaults in `ProviderSweepSettings`.
    /// A charge is swept once its own re-checks are used up, so that threshold follows
    /// `subscriptions` rather than having a setting of its own.
    mutating func providerSweepSettings(subscriptions: SubscriptionSettings) -> ProviderSweepSettings {
        var settings = ProviderSweepSettings()
        let interval = integer("PAYHOOK_SWEEP_INTERVAL_SECONDS", default: 300, range: 0...86_400)
        settings.interval = interval == 0 ? nil : .seconds(interval)
        func duration(_ name: String, _ value: inout Duration) {
            guard let text = string(name) else { return }
            switch SubscriptionSettings.parseDuration(text) {
            case .success(let parsed): value = parsed
            case .failure(let failure): problem(name, "must be one duration such as 7d, 24h or 30m (\(failure.message))")
            }
        }
        duration("PAYHOOK_SWEEP_ORDER_DEADLINE", &settings.orderDeadline)
        duration("PAYHOOK_SWEEP_PENDING_AFTER", &settings.pendingAfter)
        duration("PAYHOOK_SWEEP_AUTHORIZATION_LIFETIME", &settings.authorizationLifetime)
        duration("PAYHOOK_SWEEP_RECHECK", &settings.recheck)
        settings.batchSize = integer("PAYHOOK_SWEEP_BATCH", default: settings.batchSize, range: 1...5000)
        settings.notifyOrderExpired = boolean("PAYHOOK_CALLBACK_ORDER_EXPIRED", default: false)
        settings.chargePendingAfter = subscriptions.pendingRecheck * subscriptions.maxPendingChecks
        return settings
    }
}
