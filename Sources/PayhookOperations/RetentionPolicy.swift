package import PayhookCore
/// How long payhook keeps deliveries it no longer needs, from the environment.
///
/// `PAYHOOK_RETENTION_DAYS` (default 30) for processed `inbound_events`,
/// `PAYHOOK_REJECTED_RETENTION_DAYS` (default 7) for `rejected_deliveries`,
/// `PAYHOOK_JOB_RETENTION_DAYS` (default 7) for succeeded and cancelled `jobs`, 0 keeping them
/// forever; `PAYHOOK_RETENTION_INTERVAL_SECONDS` (default 600) between sweeps.
package struct RetentionPolicy: Sendable, Equatable {
    package init(interval: Duration = .seconds(600)) {
        self.interval = interval
    }

    var processedInboundDays = 30
    var rejectedDays = 7
    /// Succeeded and cancelled jobs. Safe to forget: every handler is idempotent on its
    /// business key (a fulfilled order, a delivered callback, a settled charge), so a job
    /// enqueued again once its old row is gone finds the work done.
    var finishedJobDays = 7
    var interval: Duration = .seconds(600)
    /// Rows per DELETE: short transactions, so no lock is held long on a busy table.
    var batchSize = 1000

    /// Parses the variables above, reporting every problem at once.
    package static func parse(environment: [String: String]) -> Result<RetentionPolicy, ConfigurationError> {
        var policy = RetentionPolicy()
        var problems: [ConfigurationProblem] = []
        func integer(_ name: String, _ range: ClosedRange<Int>) -> Int? {
            guard let text = environment[name] else { return nil }
            guard let value = Int(text), range.contains(value) else {
                problems.append(ConfigurationProblem(variable: name, message: "must be a whole number from \(range.lowerBound) to \(range.upperBound)"))
                return nil
            }
            return value
        }
        if let days = integer("PAYHOOK_RETENTION_DAYS", 0...3650) { policy.processedInboundDays = days }
        if let days = integer("PAYHOOK_REJECTED_RETENTION_DAYS", 0...3650) { policy.rejectedDays = days }
        if let days = integer("PAYHOOK_JOB_RETENTION_DAYS", 0...3650) { policy.finishedJobDays = days }
        if let seconds = integer("PAYHOOK_RETENTION_INTERVAL_SECONDS", 10...86400) { policy.interval = .seconds(seconds) }
        return problems.isEmpty ? .success(policy) : .failure(ConfigurationError(problems: problems))
    }
}
