package import PayhookLedger

extension ProcessingHooks {
    /// Subscriptions react to processing: a disabled or expired token pauses its subscriptions
    /// (`SubscriptionTokenLifecycle`), and a payment or order written for a charge's reference
    /// wakes the charge job waiting on it (`ChargeSettlementTrigger`).
    package static let subscriptions = ProcessingHooks(
        tokenStatusChanged: { tokenID, status, occurredAt, connection in
            try await SubscriptionTokenLifecycle.tokenStatusChanged(tokenID: tokenID, status: status,
                                                                    occurredAt: occurredAt, on: connection)
        },
        afterBatch: { touched, connection in
            try await ChargeSettlementTrigger.afterProcessing(touched, on: connection)
            return AfterBatchReport()
        })
}
