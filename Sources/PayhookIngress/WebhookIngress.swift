package import Foundation
package import PayhookCore
package import PayhookHTTP
import PayhookProviders

/// The front door: route, limits, signature, durable append, and only then the 2xx.
///
/// Runs on the HTTP server's threads and never blocks them: the answer is sent from the
/// writer's completion once the delivery is committed (or has failed to be).
package struct WebhookIngress: Sendable {
    package init(verifiers: WebhookVerifiers, writer: InboundEventWriter, rejections: RejectedDeliveryRecorder, rejectionQuota: RejectedDeliveryQuota, allowedAddresses: [ProviderID: AddressAllowList] = [:], metrics: IngressMetrics, logger: Logger, now: @escaping @Sendable () -> Date) {
        self.verifiers = verifiers
        self.writer = writer
        self.rejections = rejections
        self.rejectionQuota = rejectionQuota
        self.allowedAddresses = allowedAddresses
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    let verifiers: WebhookVerifiers
    let writer: InboundEventWriter
    let rejections: RejectedDeliveryRecorder
    /// Which refusals become `rejected_deliveries` rows; all are counted in metrics.
    let rejectionQuota: RejectedDeliveryQuota
    /// Client networks per provider (`PAYHOOK_<PROVIDER>_ALLOWED_CIDRS`); absent: any address.
    var allowedAddresses: [ProviderID: AddressAllowList] = [:]
    let metrics: IngressMetrics
    let logger: Logger
    let now: @Sendable () -> Date
    /// Holds back repeats of a warning line (see `LogLineLimiter`); the metric counts them all.
    let warningLines = LogLineLimiter(interval: .seconds(1))
    /// One summary line per provider every 10 s for refusals not written to the table.
    let heldBackLines = LogLineLimiter(interval: .seconds(10))

    /// Route segments accepted as an account name: what can also appear in a variable name.
    package static func isValidAccount(_ account: Substring) -> Bool {
        (1...64).contains(account.count) && account.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }

    /// The provider and account segments of `/webhooks/{provider}[/{account}]`; `nil` for
    /// other paths. ASCII paths are split on bytes (no array, no grapheme breaking); others
    /// take the Character split, where the two could disagree.
    package static func webhookRoute(_ path: String) -> (provider: Substring, account: Substring?)? {
        let utf8 = path.utf8
        guard utf8.allSatisfy({ $0 < 0x80 }) else {
            let segments = path.split(separator: "/", omittingEmptySubsequences: false)
            // "", "webhooks", provider[, account]
            guard segments.count >= 3, segments.count <= 4, segments[0].isEmpty, segments[1] == "webhooks" else { return nil }
            return (segments[2], segments.count == 4 ? segments[3] : nil)
        }
        let prefix = "/webhooks/".utf8
        guard utf8.starts(with: prefix) else { return nil }
        let providerStart = utf8.index(utf8.startIndex, offsetBy: prefix.count)
        guard let slash = utf8[providerStart...].firstIndex(of: UInt8(ascii: "/")) else {
            return (path[providerStart...], nil)
        }
        let accountStart = utf8.index(after: slash)
        guard !utf8[accountStart...].contains(UInt8(ascii: "/")) else { return nil }
        return (path[providerStart..<slash], path[accountStart...])
    }

    /// Handles `/webhooks/{provider}[/{account}]`; returns false for other paths.
    package func handle(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) -> Bool {
        guard let route = Self.webhookRoute(request.path) else { return false }
        let started = ContinuousClock.now
        guard let provider = ProviderID(rawValue: String(route.provider)) else {
            respond(.text(404, "unknown provider\n"))
            return true
        }
        if let allowed = allowedAddresses[provider], !allowed.allows(request.remoteAddress) {
            reject(provider, account: route.account.map(String.init) ?? "", reason: "address_not_allowed", status: 403, request, respond)
            return true
        }
        var account: String?
        if let accountSegment = route.account {
            guard Self.isValidAccount(accountSegment) else {
                reject(provider, account: "", reason: "unknown_account", status: 404, request, respond)
                return true
            }
            account = String(accountSegment)
        }
        guard request.method == "POST" else {
            metrics.rejected(provider, reason: "method_not_allowed")
            respond(HTTPResponse(status: 405, headers: [("Allow", "POST"), ("Content-Type", "text/plain")], body: Array("method not allowed\n".utf8)))
            return true
        }
        if let contentType = request.header("content-type"), !Self.isJSON(contentType) {
            metrics.rejected(provider, reason: "unsupported_media_type")
            respond(.text(415, "content type must be application/json\n"))
            return true
        }

        let verifier: any WebhookVerifier
        switch verifiers.lookup(provider: provider, account: account) {
        case .verifier(let found):
            verifier = found
        case .unknownAccount:
            reject(provider, account: account ?? "", reason: "unknown_account", status: 404, request, respond)
            return true
        case .notConfigured:
            logger.error("webhook refused: no secret configured for this provider; set its key ring", [
                "provider": .string(provider.rawValue),
                "variable": .string("PAYHOOK_\(provider.rawValue.uppercased())_\(EnvironmentNames.keyRingSuffix(provider))"),
            ])
            metrics.rejected(provider, reason: "not_configured")
            respond(.text(503, "provider not configured\n"))
            return true
        }

        let webhook = WebhookRequest(
            provider: provider, account: account, rawQuery: request.rawQuery, headers: request.headers,
            body: request.body, remoteAddress: request.remoteAddress, receivedAt: now())
        switch verifier.verify(webhook, now: webhook.receivedAt) {
        case .rejected(let reason):
            reject(provider, account: account ?? "", reason: reason.rawValue, status: 401, request, respond)
        case .verified(let delivery):
            for warning in delivery.warnings {
                metrics.registry.increment("payhook_signature_warnings_total", [("provider", provider.rawValue), ("warning", warning)])
                // Counted every time, logged once a second: a replay of old deliveries repeats it per delivery.
                if let heldBack = warningLines.admit(provider.rawValue + "/" + warning) {
                    logger.warning("verified delivery with a warning", [
                        "provider": .string(provider.rawValue), "warning": .string(warning), "suppressed": .int(Int64(heldBack)),
                    ])
                }
            }
            let draft = InboundEventDraft(
                provider: provider, account: account ?? "", dedupKey: delivery.dedupKey, eventType: delivery.eventType,
                receivedAt: webhook.receivedAt, remoteAddress: request.remoteAddress,
                headersJSON: Self.headersJSON(delivery.keptHeaders, contentType: request.header("content-type")),
                rawQuery: request.rawQuery, body: request.body, keyIndex: Int16(clamping: delivery.keyIndex))
            let counters = metrics.of(provider)
            writer.store(draft) { outcome in
                switch outcome {
                case .stored:
                    counters.accepted.increment()
                    respond(Self.acknowledgement(provider))
                case .duplicate:
                    counters.duplicate.increment()
                    respond(Self.acknowledgement(provider))
                case .unavailable:
                    counters.failed.increment()
                    respond(Self.storageUnavailable)
                }
                counters.latency.observe(ContinuousClock.now - started)
            }
        }
        return true
    }

    /// What each provider expects as a success answer; Adyen's body satisfies its old rule too.
    /// Built once: every acknowledged delivery sends one of these.
    static func acknowledgement(_ provider: ProviderID) -> HTTPResponse {
        switch provider {
        case .adyen: adyenAcknowledgement
        case .mercadopago, .pxp: plainAcknowledgement
        }
    }

    private static let adyenAcknowledgement =
        HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Array("[accepted]".utf8)).reusable()
    private static let plainAcknowledgement =
        HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Array("ok".utf8)).reusable()
    private static let storageUnavailable = HTTPResponse(
        status: 503, headers: [("Retry-After", "5"), ("Content-Type", "text/plain")],
        body: Array("storage unavailable, retry\n".utf8)).reusable()

    /// `application/json` or `application/*+json`, parameters and case aside; compared on
    /// bytes because it runs for every delivery.
    static func isJSON(_ contentType: String) -> Bool {
        var text = contentType
        let verdict: Bool? = text.withUTF8 { bytes in
            // Outside ASCII, bytes and Characters can disagree on where a prefix ends; such
            // (unusual) values take the Character comparison below.
            var parametersStart = bytes.count
            for index in 0..<bytes.count {
                let byte = bytes[index]
                if byte >= 0x80 { return nil }
                if byte == UInt8(ascii: ";") && parametersStart == bytes.count { parametersStart = index }
            }
            let media = bytes.trimmingASCIIWhitespace(0..<parametersStart)
            let start = media.lowerBound
            let end = media.upperBound
            func matches(_ literal: StaticString, at offset: Int) -> Bool {
                let count = literal.utf8CodeUnitCount
                guard offset >= start, offset + count <= end else { return false }
                for index in 0..<count {
                    let byte = bytes[offset + index]
                    guard (byte >= 65 && byte <= 90 ? byte + 32 : byte) == literal.utf8Start[index] else { return false }
                }
                return true
            }
            if end - start == 16 && matches("application/json", at: start) { return true }
            return matches("application/", at: start) && end - start >= 17 && matches("+json", at: end - 5)
        }
        if let verdict { return verdict }
        let media = (contentType.firstIndex(of: ";").map { contentType[..<$0] } ?? Substring(contentType))
            .trimmingASCIIWhitespace().asciiLowercased()
        return media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json"))
    }

    /// The kept headers as a JSON object with sorted keys (the content type replacing any kept
    /// one). Headers that need escaping go through JSONOutput, the one writer; the rest, nearly
    /// every delivery, take a fast path of whole-string copies into one buffer, because this runs
    /// for every delivery. Both write the same bytes.
    static func headersJSON(_ kept: KeptHeaders, contentType: String?) -> String {
        var headers: [KeptHeaders.Header] = []
        headers.reserveCapacity(kept.headers.count + 1)
        for header in kept.headers where contentType == nil || header.name != "content-type" {
            headers.append(header)
        }
        if let contentType { headers.append(KeptHeaders.Header(name: "content-type", value: contentType)) }
        headers.sort { $0.name < $1.name }

        var capacity = 2
        var plain = true
        for header in headers {
            capacity += header.name.utf8.count + header.value.utf8.count + 6
            plain = plain && !JSONString.needsEscaping(header.name) && !JSONString.needsEscaping(header.value)
        }
        guard plain else {
            return JSONOutput.object(headers.map { JSONOutput.Member($0.name, .string($0.value)) }).rendered
        }
        // Written straight into the String's storage: one allocation, no intermediate array.
        return String(unsafeUninitializedCapacity: capacity) { buffer in
            var count = 0
            func put(_ byte: UInt8) {
                buffer[count] = byte
                count += 1
            }
            func put(_ text: String) {
                var text = text
                text.withUTF8 { utf8 in
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[count...]).initialize(fromContentsOf: utf8)
                    count += utf8.count
                }
            }
            put(UInt8(ascii: "{"))
            for (index, header) in headers.enumerated() {
                if index > 0 { put(UInt8(ascii: ",")) }
                put(UInt8(ascii: "\""))
                put(header.name)
                put(UInt8(ascii: "\""))
                put(UInt8(ascii: ":"))
                put(UInt8(ascii: "\""))
                put(header.value)
                put(UInt8(ascii: "\""))
            }
            put(UInt8(ascii: "}"))
            return count
        }
    }

    private func reject(
        _ provider: ProviderID, account: String, reason: String, status: Int,
        _ request: HTTPRequest, _ respond: @escaping @Sendable (HTTPResponse) -> Void
    ) {
        metrics.rejected(provider, reason: reason)
        // Counted always; written (and logged one by one) within the quota only, so a flood of
        // forgeries costs counters, not disk.
        let response = HTTPResponse.text(status, Self.refusalText(status: status, reason: reason))
        if rejectionQuota.admit(provider: provider, remoteAddress: request.remoteAddress) {
            logger.info("delivery rejected", ["provider": .string(provider.rawValue), "reason": .string(reason), "remote_addr": .string(request.remoteAddress)])
            // Signature headers are kept (they prove nothing without the secret); nothing else is.
            rejections.record(RejectedDelivery(
                provider: provider, account: account, reason: reason, remoteAddress: request.remoteAddress,
                receivedAt: now(), headersJSON: Self.headersJSON(KeptHeaders(request.headers, keeping: Self.forensicHeaders), contentType: nil),
                body: request.body))
        } else {
            metrics.of(provider).heldBack.increment()
            if let earlier = heldBackLines.admit(provider.rawValue) {
                logger.warning("rejected deliveries not recorded: over PAYHOOK_REJECTED_RECORD_* (all are counted in payhook_deliveries_rejected_total)", [
                    "provider": .string(provider.rawValue), "held_back": .int(Int64(earlier + 1)),
                    "remote_addr": .string(request.remoteAddress), "reason": .string(reason),
                ])
            }
            // A source over its quota waits for its answer: its connection is parked (no thread
            // held), so a keep-alive flood slows to connections ÷ delay instead of keeping the
            // ingress event loop (one thread, docs/decisions/0009) busy answering it ahead of
            // genuine deliveries (bench/hostile measures a flood with and without the delay).
            Self.refusalDelayQueue.asyncAfter(deadline: .now() + Self.heldBackRefusalDelay) { respond(response) }
            return
        }
        respond(response)
    }

    /// How long a refusal over the quota waits for its answer.
    static let heldBackRefusalDelay: DispatchTimeInterval = .milliseconds(250)
    private static let refusalDelayQueue = DispatchQueue(label: "payhook.ingress.refusal-delay")

    private static func refusalText(status: Int, reason: String) -> String {
        switch status {
        case 401: "invalid signature: \(reason)\n"
        case 403: "address not allowed\n"
        default: "unknown account\n"
        }
    }

    static let forensicHeaders: Set<String> = [
        "content-type", "user-agent", "x-signature", "x-request-id", "hmacsignature", "x-signature-timestamp",
    ]
}

/// The ingress counters, with a handle per provider so the hot path never hashes labels.
package struct IngressMetrics: Sendable {
    package struct PerProvider: Sendable {
        let accepted: MetricsRegistry.Counter
        let duplicate: MetricsRegistry.Counter
        let failed: MetricsRegistry.Counter
        let latency: MetricsRegistry.Histogram
        /// Refusals not written to `rejected_deliveries` (over the quota).
        let heldBack: MetricsRegistry.Counter
    }

    let registry: MetricsRegistry
    private let perProvider: [ProviderID: PerProvider]

    package init(registry: MetricsRegistry) {
        self.registry = registry
        registry.describe("payhook_deliveries_accepted_total", type: "counter", help: "Verified deliveries committed to inbound_events.")
        registry.describe("payhook_deliveries_duplicate_total", type: "counter", help: "Verified deliveries already stored (acknowledged, stored once).")
        registry.describe("payhook_deliveries_rejected_total", type: "counter", help: "Deliveries refused, by reason.")
        registry.describe("payhook_deliveries_failed_total", type: "counter", help: "Verified deliveries not stored (answered 503).")
        registry.describe("payhook_signature_warnings_total", type: "counter", help: "Verified deliveries with a warning such as a stale timestamp.")
        registry.describe("payhook_ingest_duration_seconds", type: "histogram", help: "From request complete to answer sent.")
        registry.describe("payhook_rejected_deliveries_held_back_total", type: "counter",
                          help: "Refused deliveries not written to rejected_deliveries (over PAYHOOK_REJECTED_RECORD_*).")
        var perProvider: [ProviderID: PerProvider] = [:]
        for provider in ProviderID.allCases {
            let labels = [("provider", provider.rawValue)]
            perProvider[provider] = PerProvider(
                accepted: registry.counter("payhook_deliveries_accepted_total", labels),
                duplicate: registry.counter("payhook_deliveries_duplicate_total", labels),
                failed: registry.counter("payhook_deliveries_failed_total", labels),
                latency: registry.histogram("payhook_ingest_duration_seconds", labels),
                heldBack: registry.counter("payhook_rejected_deliveries_held_back_total", labels))
        }
        self.perProvider = perProvider
    }

    func of(_ provider: ProviderID) -> PerProvider { perProvider[provider]! }

    func rejected(_ provider: ProviderID, reason: String) {
        registry.increment("payhook_deliveries_rejected_total", [("provider", provider.rawValue), ("reason", reason)])
    }
}
