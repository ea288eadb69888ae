import Foundation
import PayhookCore
import PayhookEmulator
import PayhookHTTP
import Testing
@testable import PayhookProviders

/// Runs `body` against a fresh emulator on an ephemeral port, stopped afterwards.
func withEmulator(
    _ adjust: (inout ProviderEmulator.Configuration) -> Void = { _ in },
    _ body: (ProviderEmulator) async throws -> Void
) async throws {
    var configuration = ProviderEmulator.Configuration()
    adjust(&configuration)
    let emulator = try ProviderEmulator(configuration: configuration)
    try emulator.start()
    defer { emulator.stop() }
    try await body(emulator)
}

/// One transport per test: the client under test gets it injected, as in production.
func makeTransport() -> CurlHTTPClient { CurlHTTPClient(maxConcurrent: 8) }

/// A deadline short enough for timeout tests yet far above a local round trip.
let shortDeadline = Duration.milliseconds(400)
/// How long the emulator holds an answer to make a client with `shortDeadline` time out.
let longDelay = Duration.seconds(5)

extension ProviderEmulator {
    func mercadoPagoClient(token: String? = nil, http: any HTTPClient = makeTransport(),
                           timeout: Duration = .seconds(5)) -> MercadoPagoAPIClient {
        MercadoPagoAPIClient(baseURL: baseURL(for: .mercadopago), accessToken: token ?? configuration.mercadoPagoAccessToken,
                             http: http, timeout: timeout)
    }

    func adyenClient(merchantAccount: String? = nil, http: any HTTPClient = makeTransport(),
                     timeout: Duration = .seconds(5)) -> AdyenAPIClient {
        AdyenAPIClient(baseURL: baseURL(for: .adyen), apiKey: configuration.adyenAPIKey,
                       merchantAccount: merchantAccount ?? configuration.adyenMerchantAccount, http: http, timeout: timeout)
    }

    func pxpClient(tokenValue: String? = nil, site: String? = nil, http: any HTTPClient = makeTransport(),
                   timeout: Duration = .seconds(5)) -> PXPAPIClient {
        PXPAPIClient(baseURL: baseURL(for: .pxp), clientID: configuration.pxpClientID, tokenID: configuration.pxpTokenID,
                     tokenValue: tokenValue ?? configuration.pxpTokenValue, merchant: configuration.pxpMerchant,
                     site: site ?? configuration.pxpSite, http: http, timeout: timeout)
    }

    /// Sends a raw request to a path under the emulator, for endpoint and validation tests.
    func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: String = "",
              timeout: Duration = .seconds(5), http: any HTTPClient = makeTransport()) async throws -> HTTPClientResponse {
        let url = try #require(URL(string: "http://127.0.0.1:\(port)\(path)"))
        return try await http.send(HTTPClientRequest(method: method, url: url, headers: headers, body: Array(body.utf8), timeout: timeout))
    }
}

/// The `ProviderAPIError` a provider call threw, or `nil` if it succeeded or threw another
/// error (closures infer `throws(any Error)`, hence the cast).
func providerError<T>(_ call: () async throws -> T) async -> ProviderAPIError? {
    do {
        _ = try await call()
        return nil
    } catch {
        return error as? ProviderAPIError
    }
}
