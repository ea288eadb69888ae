import PayhookAdmin
import PayhookCore
import PayhookHTTP

/// The admin listener's door: which credential a request carries (401 when none matches) and
/// whether its scope covers the operation (403 naming the scope needed otherwise).
///
/// Both refusals are counted by reason. They are logged once per minute per client address and
/// reason, with how many were held back, so a misconfigured scraper or a guessing client cannot
/// flood the log.
struct AdminGate: AdminBearerGate {
    let store: AdminCredentialStore
    let metrics: MetricsRegistry
    let logger: Logger
    let refusalLines: LogLineLimiter

    init(store: AdminCredentialStore, metrics: MetricsRegistry, logger: Logger,
         refusalLines: LogLineLimiter = LogLineLimiter(interval: .seconds(60))) {
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.refusalLines = refusalLines
        metrics.describe("payhook_admin_requests_refused_total", type: "counter",
                         help: "Admin listener requests refused: unauthenticated (401, no or unknown token) or forbidden (403, outside the credential's scope).")
    }

    /// The caller of `request`, or the refusal to send; `needed` is the scope of the operation
    /// the router found (`AdminAuthorization.neededScope`). The credentials are read once here:
    /// a reload while the request runs does not change its answer.
    func check(_ request: HTTPRequest, needs needed: AdminScope?) -> AdminGateDecision {
        guard let token = AdminAuthorization.bearerToken(request), let credential = store.credentials.authenticate(token) else {
            refused("unauthenticated", request, ["hint": "no bearer token, or one no credential has"])
            return .refused(AdminAuthorization.unauthorized)
        }
        guard let needed, !credential.scope.permits(needed) else {
            return .allowed(AdminCaller(credential))
        }
        refused("forbidden", request, ["credential": .string(credential.name), "scope": .string(credential.scope.rawValue),
                                       "needed_scope": .string(needed.rawValue)])
        return .refused(AdminAuthorization.forbidden(needed: needed))
    }

    private func refused(_ reason: String, _ request: HTTPRequest, _ fields: [String: LogValue]) {
        metrics.increment("payhook_admin_requests_refused_total", [("reason", reason)])
        guard let heldBack = refusalLines.admit("\(reason)/\(request.remoteAddress)") else { return }
        logger.warning("admin request refused", fields.merging([
            "reason": .string(reason), "remote_addr": .string(request.remoteAddress), "method": .string(request.method),
            "path": .string(request.path), "held_back": .int(Int64(heldBack)),
        ]) { $1 })
    }
}
