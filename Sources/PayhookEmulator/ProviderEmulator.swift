import Dispatch
public import Foundation
public import PayhookCore
public import PayhookHTTP
import Synchronization

/// One HTTP server that plays Mercado Pago, Adyen and PXP Unity for tests and local runs.
///
/// Each provider lives under its own path prefix, so a client configured with the base URL
/// from ``baseURL(for:)`` sends exactly the paths it would send to the provider:
///
/// | provider    | base URL                                 | endpoints                                            |
/// |-------------|------------------------------------------|------------------------------------------------------|
/// | Mercado Pago| `http://127.0.0.1:{port}/mercadopago`    | `GET /v1/orders/{id}`, `GET /v1/payments/{id}`, `POST /v1/orders` |
/// | Adyen       | `http://127.0.0.1:{port}/adyen`          | `POST /v72/payments`                                 |
/// | PXP         | `http://127.0.0.1:{port}/pxp/api/v1`     | `GET /transactions/{merchant}/{site}?systemTransactionId=` or `?merchantTransactionId=`, `POST /transactions` |
///
/// State is in memory: seed it through ``mercadoPago``, ``adyen`` and ``pxp``, arm faults
/// there, and read the ``requests`` log (credentials redacted) and per-endpoint counters.
///
/// ```swift
/// let emulator = try ProviderEmulator()
/// try emulator.start()
/// defer { emulator.stop() }
/// emulator.mercadoPago.putOrder(id: "ORD1", json: orderJSON)
/// emulator.mercadoPago.fail(next: 1, with: .status(503), on: .order, id: "ORD1")
/// ```
///
/// Handlers run on the server's polling thread and answer at once (delayed answers are sent
/// from a Dispatch queue), so a delayed request never blocks the others. That includes the
/// charge latency (``Configuration/chargeLatency``, ``setChargeLatency(_:)``): a bench can have
/// every charge answered after 50 ms while hundreds are in flight. All methods are
/// thread-safe; `stop()` must not be called from a handler.
public final class ProviderEmulator: Sendable {
    /// Listen address and the credentials the emulated providers accept.
    public struct Configuration: Sendable {
        /// Listen address; numeric, so base URLs can be built from it.
        public var host = "127.0.0.1"
        /// Listen port; 0 picks an ephemeral one (see ``ProviderEmulator/port``).
        public var port = 0
        /// Delayed answers (``EmulatorFault/timeout(after:)``) must be shorter than this, or the
        /// server answers 503 first.
        public var handlerTimeoutSeconds = 60
        /// Accepted as `Authorization: Bearer …`.
        public var mercadoPagoAccessToken = "TEST-payhook-emulator-access-token"
        /// Currency of orders created by charges (the account's site currency): recorded in
        /// the ledger, and written in the order only with ``mercadoPagoAnswersWithCurrency``.
        public var mercadoPagoCurrency = "BRL"
        /// `country_code` of orders created by charges, as Mercado Pago's guides write it
        /// (ISO 3166 alpha-3); it names the site whose currency is ``mercadoPagoCurrency``.
        public var mercadoPagoCountryCode = "BRA"
        /// Whether created orders also carry a `currency` field. Off by default: the published
        /// `GET /v1/orders/{id}` answers carry `country_code` and no `currency`.
        public var mercadoPagoAnswersWithCurrency = false
        /// `user_id` of orders created by charges.
        public var mercadoPagoUserID = "1873904477"
        /// Accepted as `X-API-Key`.
        public var adyenAPIKey = "payhook-emulator-adyen-api-key"
        /// The only `merchantAccount` charges may name.
        public var adyenMerchantAccount = "PayhookECOM"
        /// Expected in `X-Client-Id`.
        public var pxpClientID = "payhook-emulator-client"
        /// Expected as the first part of the `PXP-UST1` credential.
        public var pxpTokenID = "payhook-emulator-token"
        /// The HMAC key PXP requests are verified with.
        public var pxpTokenValue = "payhook-emulator-token-value"
        /// The only `merchant` PXP charges may name.
        public var pxpMerchant = "PAYHOOK-1"
        /// The only `site` PXP charges may name.
        public var pxpSite = "SITE-EU"
        /// Recompute PXP request HMACs (see ``PXPEmulator``); off, only their form is checked.
        public var pxpVerifiesSignatures = true
        /// How long every charge answer (Mercado Pago `POST /v1/orders`, Adyen `/payments`,
        /// PXP `POST /transactions`) is held before it is sent, as a provider's processing time;
        /// `nil` answers at once. The charge executes first, and the wait happens on a Dispatch
        /// timer, never on the server's polling thread. A `.timeout(after:)` fault on the same
        /// request waits for the longer of the two. Must stay below `handlerTimeoutSeconds`.
        public var chargeLatency: Duration? = nil
        /// How long Mercado Pago remembers an `X-Idempotency-Key` (UNCONFIRMED: not published;
        /// 24 hours here, like payhook's default `PAYHOOK_MERCADOPAGO_IDEMPOTENCY_WINDOW`).
        /// After it, the same key and body execute a new charge. nil remembers forever.
        public var mercadoPagoIdempotencyWindow: Duration? = .seconds(24 * 3600)
        /// How long Adyen remembers an `Idempotency-Key`: at least 7 days, per Adyen's docs.
        public var adyenIdempotencyWindow: Duration? = .seconds(7 * 24 * 3600)
        /// How long PXP treats a `merchantTransactionId` as a replay. UNCONFIRMED (PXP answers
        /// to a reused id are not published); nil, never expiring, by default.
        public var pxpIdempotencyWindow: Duration? = nil
        /// Simultaneous connections the server accepts (libmicrohttpd's limit), delayed ones
        /// included. Hundreds of charges in flight, each held for `chargeLatency`, each hold one.
        public var connectionLimit = 1024

        /// The defaults: loopback, an ephemeral port, the test credentials above.
        public init() {}
    }

    /// The configuration the emulator was created with (credentials included: it is test data).
    public let configuration: Configuration
    /// Mercado Pago, under `/mercadopago`.
    public let mercadoPago: MercadoPagoEmulator
    /// Adyen Checkout, under `/adyen`.
    public let adyen: AdyenEmulator
    /// PXP Unity, under `/pxp/api/v1`.
    public let pxp: PXPEmulator
    private let server: HTTPServer
    private let log: RequestLog
    private let latency: ChargeLatencySetting

    /// Creates the emulator; nothing is bound until ``start()``.
    /// - Throws: `HTTPServerError` for an invalid listen configuration.
    public init(configuration: Configuration = Configuration()) throws(HTTPServerError) {
        let log = RequestLog()
        let mercadoPago = MercadoPagoEmulator(
            accessToken: configuration.mercadoPagoAccessToken, currency: configuration.mercadoPagoCurrency,
            countryCode: configuration.mercadoPagoCountryCode, answersWithCurrency: configuration.mercadoPagoAnswersWithCurrency,
            userID: configuration.mercadoPagoUserID, log: log)
        let adyen = AdyenEmulator(
            apiKey: configuration.adyenAPIKey, merchantAccount: configuration.adyenMerchantAccount, log: log)
        let pxp = PXPEmulator(
            clientID: configuration.pxpClientID, tokenID: configuration.pxpTokenID,
            tokenValue: configuration.pxpTokenValue, merchant: configuration.pxpMerchant, site: configuration.pxpSite,
            verifiesSignatures: configuration.pxpVerifiesSignatures, log: log)

        mercadoPago.setIdempotencyWindow(configuration.mercadoPagoIdempotencyWindow)
        adyen.setIdempotencyWindow(configuration.adyenIdempotencyWindow)
        pxp.setIdempotencyWindow(configuration.pxpIdempotencyWindow)

        var serverConfiguration = HTTPServerConfiguration()
        serverConfiguration.host = configuration.host
        serverConfiguration.port = configuration.port
        serverConfiguration.handlerTimeoutSeconds = configuration.handlerTimeoutSeconds
        serverConfiguration.threadCount = 1
        serverConfiguration.connectionLimit = configuration.connectionLimit
        // Long enough to hold a connection through a delayed answer.
        serverConfiguration.connectionTimeoutSeconds = max(10, configuration.handlerTimeoutSeconds)
        let latency = ChargeLatencySetting(configuration.chargeLatency)
        self.server = try HTTPServer(configuration: serverConfiguration) { request, respond in
            var reply = Self.dispatch(request, mercadoPago: mercadoPago, adyen: adyen, pxp: pxp)
            if Self.isCharge(provider: reply.provider, endpoint: reply.reply.endpoint),
               let chargeLatency = latency.value {
                reply.reply.delay = max(reply.reply.delay ?? .zero, chargeLatency)
            }
            log.append(EmulatedRequest(
                provider: reply.provider, endpoint: reply.reply.endpoint, resourceID: reply.reply.resourceID,
                method: request.method, path: request.path, headers: EmulatedRequest.redact(request.headers),
                status: reply.reply.status))
            if let delay = reply.reply.delay {
                let response = reply.reply.response
                DispatchQueue.global().asyncAfter(deadline: .now() + Self.dispatchInterval(delay)) {
                    respond(response)
                }
            } else {
                respond(reply.reply.response)
            }
        }
        self.configuration = configuration
        self.mercadoPago = mercadoPago
        self.adyen = adyen
        self.pxp = pxp
        self.log = log
        self.latency = latency
    }

    /// Changes ``Configuration/chargeLatency`` for charges received from now on.
    public func setChargeLatency(_ latency: Duration?) { self.latency.value = latency }

    /// The charge latency in force.
    public var chargeLatency: Duration? { latency.value }

    /// Charges executed by all three providers (replays excluded).
    public var totalExecutedCharges: Int {
        mercadoPago.totalExecutedCharges + adyen.totalExecutedCharges + pxp.totalExecutedCharges
    }

    /// Expires every idempotency key of the three providers at once (see
    /// ``ChargeControls/forgetIdempotencyKeys()``): a charge resent with an earlier key now
    /// executes again and shows in the ledger as a second charge.
    public func forgetIdempotencyKeys() {
        mercadoPago.forgetIdempotencyKeys()
        adyen.forgetIdempotencyKeys()
        pxp.forgetIdempotencyKeys()
    }

    /// Binds and starts serving.
    /// - Throws: `HTTPServerError`, e.g. `.startFailed` when the port is taken.
    public func start() throws(HTTPServerError) { try server.start() }

    /// Stops serving; answers still delayed are dropped. Idempotent.
    public func stop() { server.stop() }

    /// The bound port (useful with port 0); 0 when not running.
    public var port: Int { server.boundPort }

    /// Where a client of `provider` should point: see the table in the type's documentation.
    public func baseURL(for provider: ProviderID) -> URL {
        let path = switch provider {
        case .mercadopago: "/mercadopago"
        case .adyen: "/adyen"
        case .pxp: "/pxp/api/v1"
        }
        var components = URLComponents()
        components.scheme = "http"
        components.host = configuration.host
        components.port = port
        components.path = path
        // The components are a numeric host, a port and a constant path, which always form a
        // URL; the fallback only keeps this total.
        return components.url ?? URL(fileURLWithPath: path)
    }

    /// Every request received so far, oldest first (bounded), credentials redacted.
    public var requests: [EmulatedRequest] { log.all }

    /// Empties the request log (counters derive from it, so they restart too).
    public func clearRequestLog() { log.removeAll() }

    private static func dispatch(
        _ request: HTTPRequest, mercadoPago: MercadoPagoEmulator, adyen: AdyenEmulator, pxp: PXPEmulator
    ) -> (provider: ProviderID?, reply: EmulatorReply) {
        let path = request.path
        if let subpath = subpath(path, under: "/mercadopago") {
            return (.mercadopago, mercadoPago.handle(request, subpath: subpath))
        }
        if let subpath = subpath(path, under: "/adyen") {
            return (.adyen, adyen.handle(request, subpath: subpath))
        }
        if let subpath = subpath(path, under: "/pxp") {
            return (.pxp, pxp.handle(request, subpath: subpath, fullPath: path))
        }
        if request.method == "GET", path == ledgerPath {
            return (nil, ledger(mercadoPago: mercadoPago, adyen: adyen, pxp: pxp))
        }
        if let reply = seed(request, mercadoPago: mercadoPago, pxp: pxp) {
            return (nil, reply)
        }
        return (nil, .json(404, .object([.init("error", .string("no emulated provider at this path"))])))
    }

    /// `GET /_emulator/executed-charges`: every executed (not replayed) charge of the three
    /// providers as `{"charges": [[provider, idempotency key, result], …]}`, for benchmarks that
    /// count charges per cycle from outside the process. Not a provider API.
    public static let ledgerPath = "/_emulator/executed-charges"

    private static func ledger(mercadoPago: MercadoPagoEmulator, adyen: AdyenEmulator, pxp: PXPEmulator) -> EmulatorReply {
        var rows: [JSONOutput] = []
        let providers: [(String, [ExecutedCharge])] = [
            ("mercadopago", mercadoPago.allExecutedCharges), ("adyen", adyen.allExecutedCharges), ("pxp", pxp.allExecutedCharges),
        ]
        for (provider, charges) in providers {
            for charge in charges {
                let result = switch charge.result {
                case .approved: "approved"
                case .pending: "pending"
                case .declined(let code): "declined:\(code)"
                case .error: "error"
                }
                rows.append(.array([provider, charge.idempotencyKey ?? "", result].map(JSONOutput.string)))
            }
        }
        return EmulatorReply(status: 200, body: JSONOutput.object([.init("charges", .array(rows))]).bytes)
    }

    private static func isCharge(provider: ProviderID?, endpoint: String?) -> Bool {
        switch provider {
        case .mercadopago?: endpoint == MercadoPagoEmulator.Endpoint.createOrder.rawValue
        case .adyen?: endpoint == AdyenEmulator.Endpoint.payments.rawValue
        case .pxp?: endpoint == PXPEmulator.Endpoint.createTransaction.rawValue
        case nil: false
        }
    }

    private static func subpath(_ path: String, under prefix: String) -> String? {
        guard path.hasPrefix(prefix) else { return nil }
        let rest = path.dropFirst(prefix.count)
        guard rest.isEmpty || rest.hasPrefix("/") else { return nil }
        return String(rest)
    }

    private static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow, seconds >= 0 else { return .seconds(Int(clamping: max(0, seconds))) }
        return .nanoseconds(Int(clamping: nanoseconds.partialValue + attoseconds / 1_000_000_000))
    }
}

/// The charge latency, read by the server's handler and changed by tests; a class so the
/// handler closure and the emulator share one `Mutex`.
private final class ChargeLatencySetting: Sendable {
    private let state: Mutex<Duration?>

    init(_ initial: Duration?) { state = Mutex(initial) }

    var value: Duration? {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
