import Foundation
package import PayhookCore
import PayhookHTTP
import PayhookLedger
package import PayhookPostgres
package import PayhookQueue

/// Runs `merchant_callback` jobs: POSTs the frozen body with fresh Standard Webhooks headers.
///
/// 2xx delivers (and an `order.paid` callback marks its order fulfilled); 410 Gone stops for
/// good (the job is discarded into a dead letter an operator can replay once the endpoint is
/// back); any other status, a timeout or a connection failure is retried with the queue's
/// backoff, always under the same `webhook-id`, and after the last attempt the callback (and
/// the order of an `order.paid`) is `failed`. Replaying the dead letter delivers it again.
///
/// An order's own `callback_url` is checked before every attempt (`CallbackDestinationPolicy`:
/// resolved afresh, sent to the address checked); a refused one is `failed` at once and
/// dead-lettered (`callback_url_refused`). `PAYHOOK_FULFILLMENT_URL` is trusted as configured.
package struct MerchantCallbackDelivery: JobHandler {
    package init(pool: PostgresPool, http: any HTTPClient, signer: StandardWebhookSigner?, defaultURL: String?, timeout: Duration, metrics: MetricsRegistry, logger: Logger,
                 destinations: CallbackDestinationPolicy = CallbackDestinationPolicy()) {
        self.destinations = destinations
        self.pool = pool
        self.http = http
        self.signer = signer
        self.defaultURL = defaultURL
        self.timeout = timeout
        self.metrics = metrics
        self.logger = logger
    }

    package static let kind = JobKind.merchantCallback.rawValue

    let pool: PostgresPool
    let http: any HTTPClient
    /// `nil` when `PAYHOOK_FULFILLMENT_SECRET` is unset: nothing is sent unsigned.
    let signer: StandardWebhookSigner?
    /// `PAYHOOK_FULFILLMENT_URL`, used when a callback names no URL of its own.
    let defaultURL: String?
    /// What an order's own `callback_url` may reach.
    let destinations: CallbackDestinationPolicy
    let timeout: Duration
    let metrics: MetricsRegistry
    let logger: Logger
    var now: @Sendable () -> Date = { Date() }

    package func run(_ job: Job) async throws -> JobOutcome {
        let callbackID: Int64
        do {
            callbackID = try job.decodeArgs(MerchantCallbackArgs.self).callbackID
        } catch {
            return .discard(.payloadInvalid, message: "\(Self.kind) needs an integer callback_id")
        }
        guard let row = try await pool.query(CallbackSQL.shared.selectCallback, [.int(callbackID)]).rows.first else {
            return .discard(.notFound, message: "no merchant callback \(callbackID)")
        }
        let id: Int64 = try row.decode("id")
        let type: String = try row.decode("type")
        let orderID: Int64? = try row.decode("order_id")
        // Delivered is final: never sent twice. A `failed` or `gone` callback whose job runs
        // again was replayed by an operator (its endpoint is back): it is delivered again, with
        // the same webhook-id and frozen body.
        guard try row.decode("status", as: String.self) != "delivered" else { return .succeeded }

        guard let signer else {
            return .retry(error: "PAYHOOK_FULFILLMENT_SECRET is not set: callbacks are never sent unsigned")
        }
        let ownURL: String? = try row.decode("url")
        guard let urlText = ownURL ?? defaultURL,
              let url = URL(string: urlText), url.scheme == "http" || url.scheme == "https" else {
            return .retry(error: "no callback URL: set PAYHOOK_FULFILLMENT_URL or the order's callback_url")
        }
        // The order's own URL came through the admin API: checked again now, since what its
        // name resolves to may have changed since registration, and called at the address checked.
        var connectAddress: String?
        if let ownURL, ownURL != defaultURL {
            do {
                connectAddress = try await destinations.destination(of: url)
            } catch {
                let refused = JobOutcome.discard(.callbackURLRefused, message: error.description)
                let reason = refused.recordedError ?? ""
                try await pool.transaction { connection in
                    try await connection.query(CallbackSQL.shared.recordAttempt, [.int(id), .text("failed"), .null, .text(reason)])
                    if type == "order.paid", let orderID {
                        try await connection.query(LedgerSQL.shared.markOrderFulfillmentFailed, [.int(orderID), .text(reason)])
                    }
                }
                count(type, "refused")
                return refused
            }
        }
        let webhookID: String = try row.decode("webhook_id")
        let body = Array(try row.decode("body", as: String.self).utf8)
        let timestamp = Int64(now().timeIntervalSince1970)
        var headers = signer.headers(webhookID: webhookID, timestamp: timestamp, body: body)
        headers.append(("Content-Type", "application/json"))
        headers.append(("User-Agent", "payhook"))

        let response: HTTPClientResponse
        do {
            response = try await http.send(HTTPClientRequest(method: "POST", url: url, headers: headers, body: body,
                                                             timeout: timeout, connectAddress: connectAddress))
        } catch {
            let message = "merchant endpoint unreachable: \(error.kind)"
            try await recordFailedAttempt(id, job, type: type, orderID: orderID, code: nil, error: message)
            count(type, "error")
            return .retry(error: message)
        }
        switch response.status {
        case 200..<300:
            try await pool.transaction { connection in
                try await connection.query(CallbackSQL.shared.recordAttempt, [.int(id), .text("delivered"), .int(Int64(response.status)), .null])
                if type == "order.paid", let orderID {
                    try await connection.query(LedgerSQL.shared.markOrderFulfilled, [.int(orderID)])
                }
            }
            count(type, "delivered")
            logger.info("merchant callback delivered", ["type": .string(type), "webhook_id": .string(webhookID)])
            return .succeeded
        case 410:
            let gone = JobOutcome.discard(.merchantGone, message: "the callback endpoint answered 410 Gone; not retried")
            let reason = gone.recordedError ?? ""
            try await pool.transaction { connection in
                try await connection.query(CallbackSQL.shared.recordAttempt, [.int(id), .text("gone"), .int(410), .text(reason)])
                if type == "order.paid", let orderID {
                    try await connection.query(LedgerSQL.shared.markOrderFulfillmentFailed, [.int(orderID), .text(reason)])
                }
            }
            count(type, "gone")
            return gone
        default:
            let message = "merchant endpoint answered HTTP \(response.status)"
            try await recordFailedAttempt(id, job, type: type, orderID: orderID, code: response.status, error: message)
            count(type, "failed_attempt")
            return .retry(error: message)
        }
    }

    /// A failed attempt: the callback stays `pending` while the job retries; on the last
    /// attempt it is `failed` and, for `order.paid`, so is the order's fulfillment (with the
    /// reason), instead of a `pending` that no job will ever change.
    private func recordFailedAttempt(_ id: Int64, _ job: Job, type: String, orderID: Int64?, code: Int?,
                                     error: String) async throws {
        let last = job.isLastAttempt
        try await pool.transaction { connection in
            try await connection.query(CallbackSQL.shared.recordAttempt, [
                .int(id), .text(last ? "failed" : "pending"), code.map { .int(Int64($0)) } ?? .null, .text(error),
            ])
            if last, type == "order.paid", let orderID {
                try await connection.query(LedgerSQL.shared.markOrderFulfillmentFailed, [
                    .int(orderID), .text("order.paid callback failed after \(job.attempt) attempts: \(error); replay its dead letter once the endpoint is fixed"),
                ])
            }
        }
    }

    private func count(_ type: String, _ outcome: String) {
        metrics.increment("payhook_merchant_callbacks_total", [("type", type), ("outcome", outcome)])
    }
}
