import PayhookCore
import PayhookOperations

extension EnvironmentReader {
    /// `PAYHOOK_RETENTION_DAYS` (0 or at least `RetentionPolicy.minimumInboundDays`),
    /// `PAYHOOK_PAYMENT_EVENT_RETENTION_DAYS`, `PAYHOOK_REJECTED_RETENTION_DAYS`,
    /// `PAYHOOK_JOB_RETENTION_DAYS` (0 keeping rows forever), `PAYHOOK_RETENTION_INTERVAL_SECONDS`
    /// and `PAYHOOK_RETENTION_PAUSE_PERCENT`; defaults in `RetentionPolicy`.
    mutating func retentionPolicy() -> RetentionPolicy {
        var policy = RetentionPolicy()
        let minimum = RetentionPolicy.minimumInboundDays
        let inboxDays = integer("PAYHOOK_RETENTION_DAYS", default: policy.processedInboundDays, range: 0...3650)
        if inboxDays == 0 || inboxDays >= minimum {
            policy.processedInboundDays = inboxDays
        } else {
            problem("PAYHOOK_RETENTION_DAYS", """
                must be 0 (keep forever) or at least \(minimum): providers retry a delivery for up to \
                \(minimum) days (Adyen), and a retry of a deleted delivery would be processed again
                """)
        }
        policy.paymentEventDays = integer("PAYHOOK_PAYMENT_EVENT_RETENTION_DAYS", default: policy.paymentEventDays, range: 0...36500)
        policy.rejectedDays = integer("PAYHOOK_REJECTED_RETENTION_DAYS", default: policy.rejectedDays, range: 0...3650)
        policy.finishedJobDays = integer("PAYHOOK_JOB_RETENTION_DAYS", default: policy.finishedJobDays, range: 0...3650)
        policy.interval = .seconds(integer("PAYHOOK_RETENTION_INTERVAL_SECONDS",
                                          default: Int(policy.interval.components.seconds), range: 10...86400))
        policy.pausePercent = integer("PAYHOOK_RETENTION_PAUSE_PERCENT", default: policy.pausePercent, range: 0...10000)
        return policy
    }
}

extension RetentionPolicy {
    /// The retention variables alone, by the main parser's rules (`Configuration.parse` reads
    /// them with everything else; this is for checking them on their own).
    static func parse(environment: [String: String]) -> Result<RetentionPolicy, ConfigurationError> {
        var reader = EnvironmentReader(environment: environment, readFile: { _ in "" })
        let policy = reader.retentionPolicy()
        return reader.problems.isEmpty ? .success(policy) : .failure(ConfigurationError(problems: reader.problems))
    }
}
