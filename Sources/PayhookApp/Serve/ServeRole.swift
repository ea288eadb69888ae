/// What one `payhook serve` process runs, as `--roles` names it. The admin listener, retention
/// and the database-backed gauges run whatever the roles.
enum ServeRole: String, Sendable, CaseIterable, Comparable {
    /// Accepts webhook deliveries into `inbound_events`.
    case ingress
    /// Normalizes inbound events into orders, payments and vault tokens.
    case processor
    /// Runs jobs: fulfillment, merchant callbacks, recurring charges.
    case worker
    /// Turns due subscriptions into charge jobs.
    case scheduler

    /// Ordered by name, as logs and messages list roles.
    static func < (lhs: ServeRole, rhs: ServeRole) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The roles a comma-separated `--roles` value names.
    /// - Returns: the names no role has, sorted, when there are any or the list is empty.
    static func parse(_ list: String) -> Result<Set<ServeRole>, UnknownRoles> {
        let names = Set(list.split(separator: ",").map(String.init))
        let unknown = names.filter { ServeRole(rawValue: $0) == nil }
        guard unknown.isEmpty, !names.isEmpty else { return .failure(UnknownRoles(names: unknown.sorted())) }
        return .success(Set(names.compactMap(ServeRole.init(rawValue:))))
    }

    /// Names `--roles` gave that are not roles.
    struct UnknownRoles: Error {
        let names: [String]
    }

    /// Every role's name, sorted, for messages.
    static var knownNames: String { allCases.sorted().map(\.rawValue).joined(separator: ", ") }
}
