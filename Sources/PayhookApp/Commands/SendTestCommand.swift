import Foundation
import PayhookCore
import PayhookHTTP
import PayhookIngress
import PayhookProviders

/// `payhook send-test`: fires a correctly signed sample delivery at a payhook ingress, as the
/// provider would send it, signed with the key ring payhook itself is configured with.
///
/// The dedup key it prints is computed by the verifier ingress runs for that route
/// (`WebhookVerifiers`), over the very request it sends: ingress answers only `[accepted]` or
/// `ok`, and this is the key the stored `inbound_events` row has. Running that verifier first
/// also proves the delivery genuine before anything is sent.
struct SendTestCommand: Subcommand {
    static let usage = """
        usage: payhook send-test PROVIDER EVENT [--to URL] [--account NAME] [--reference REF] [--id ID]
                                 [--amount MINOR-UNITS CURRENCY] [--count N] [--emulator URL] [--json]
               payhook send-test --list [--json]

          PROVIDER EVENT      what to send; `payhook send-test --list` lists the events
          --to URL            where to post: a base URL (the route is appended) or a full
                              webhook URL, whose /{account} selects the key ring (default:
                              http://PAYHOOK_LISTEN, 0.0.0.0 as 127.0.0.1)
          --account NAME      the account's route /webhooks/PROVIDER/NAME, signed with its own
                              key ring (PAYHOOK_<PROVIDER>_<NAME>_…)
          --reference REF     merchant reference (shopper reference of token events)
          --id ID             the payment, order, transaction or token the event is about (an
                              Adyen modification's originalReference); default: a new one.
                              Give its --reference again: the emulator's copy is replaced
          --amount 1999 EUR   integer minor units and an ISO 4217 code (default 1999 EUR;
                              1999 BRL for Mercado Pago)
          --count N           send N events, each with new ids unless --id names one (1–1000)
          --emulator URL      first make payhook-emulator at URL serve the order, payment or
                              transaction a thin Mercado Pago or PXP webhook points at (default:
                              $PAYHOOK_SEND_TEST_EMULATOR; `ops/run` sets it)
          --json              one JSON object per event (JSON Lines with --count)

        Keys come from payhook's own configuration (PAYHOOK_ADYEN_HMAC_KEYS, …; the first of each
        ring is current). Prints the answer and the stored delivery's dedup key; exits 0 when every
        answer was 2xx, 1 otherwise, 2 for invalid input.

        """

    /// The variable `ops/run` sets so `send-test` seeds the demo's emulator.
    static let emulatorVariable = "PAYHOOK_SEND_TEST_EMULATOR"

    /// `ProviderEmulator.seedPathPrefix` without its leading `/` (payhook does not link the
    /// emulator; the two meet only over HTTP).
    static let emulatorSeedPath = "_emulator/seed/"

    let environment: [String: String]
    let output: CommandOutput

    func run(_ arguments: ArraySlice<String>) async -> Int32 {
        var rest = arguments
        if rest.first == "help" || rest.first == "--help" || rest.first == "-h" { return printUsage() }
        // `--amount` takes two words; the rest is ordinary options.
        var amountWords: [String]?
        if let index = rest.firstIndex(of: "--amount") {
            let words = Array(rest[(index + 1)...].prefix(2))
            guard words.count == 2, !words.contains(where: { $0.hasPrefix("--") }) else {
                return usageError("--amount needs minor units and a currency, e.g. --amount 1999 EUR")
            }
            amountWords = words
            rest.removeSubrange(index...(index + 2))
            guard !rest.contains("--amount") else { return usageError("--amount given twice") }
        }
        guard let parsed = parse(rest, options: ["--to", "--account", "--reference", "--id", "--count", "--emulator"],
                                 flags: ["--list", "--json"]) else { return 2 }
        if parsed.flags.contains("--list") {
            guard parsed.positionals.isEmpty, parsed.values.isEmpty, amountWords == nil else {
                return usageError("--list takes no other arguments but --json")
            }
            printList(json: parsed.flags.contains("--json"))
            return 0
        }

        guard parsed.positionals.count == 2 else { return usageError("send-test needs a PROVIDER and an EVENT") }
        guard let provider = ProviderID(rawValue: parsed.positionals[0].lowercased()) else {
            return usageError("unknown provider '\(parsed.positionals[0])'; known: \(ProviderID.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let event = SendTestEvent.find(provider: provider, name: parsed.positionals[1]) else {
            return usageError("unknown \(provider.rawValue) event '\(parsed.positionals[1])'; `payhook send-test --list` lists them")
        }
        let amount: Money
        switch Self.parseAmount(amountWords, default: SendTestEvent.defaultAmount(provider)) {
        case .success(let value): amount = value
        case .failure(let problem): return usageError(problem.message)
        }
        if provider == .adyen {
            do {
                _ = try AdyenCurrency.adyenValue(of: amount)
            } catch {
                return usageError("--amount: \(error)")
            }
        }
        var count = 1
        if let text = parsed.values["--count"] {
            guard let value = Int(text), (1...1000).contains(value) else { return usageError("--count must be a number from 1 to 1000") }
            count = value
        }
        var account = parsed.values["--account"]
        var to: URL?
        if let text = parsed.values["--to"] {
            guard let url = Self.httpURL(text) else { return usageError("--to must be an http or https URL, e.g. http://127.0.0.1:8080") }
            // A full webhook URL names the route, and its account decides the key ring, as at ingress.
            if !(url.path.isEmpty || url.path == "/"), let named = WebhookIngress.webhookRoute(url.path) {
                guard named.provider == provider.rawValue else {
                    return usageError("--to names the /webhooks/\(named.provider) route, not \(provider.rawValue)'s")
                }
                if let segment = named.account.map(String.init) {
                    guard account == nil || account == segment else {
                        return usageError("--to names account \(segment), --account \(account ?? "")")
                    }
                    account = segment
                }
            }
            to = url
        }
        if let account, !WebhookIngress.isValidAccount(Substring(account)) {
            return usageError("--account must be 1–64 letters, digits, '-' or '_' (a route segment)")
        }
        for option in ["--reference", "--id"] where parsed.values[option]?.isEmpty == true {
            return usageError("\(option) must not be empty")
        }
        let emulatorText = parsed.values["--emulator"] ?? environment[Self.emulatorVariable].flatMap { $0.isEmpty ? nil : $0 }
        var emulator: URL?
        if let emulatorText {
            guard let url = Self.httpURL(emulatorText) else {
                return usageError("--emulator must be an http URL such as http://127.0.0.1:8099 (from \(parsed.values["--emulator"] == nil ? "$" + Self.emulatorVariable : "--emulator"))")
            }
            emulator = url
        }

        let configuration: Configuration
        do {
            configuration = try Configuration.parse(environment: environment) { path in try String(contentsOfFile: path, encoding: .utf8) }
        } catch {
            return fail(error.description)
        }
        let route = "/webhooks/\(provider.rawValue)" + (account.map { "/\($0)" } ?? "")
        let target: URL
        if let to {
            target = to.path.isEmpty || to.path == "/" ? to.appendingPathComponent(String(route.dropFirst())) : to
        } else {
            guard let listen = Self.defaultTarget(configuration) else {
                return fail("PAYHOOK_LISTEN=\(configuration.listen) does not form a URL; pass --to")
            }
            target = listen.appendingPathComponent(String(route.dropFirst()))
        }
        guard let ring = configuration.webhookSecrets.ring(provider: provider, account: account), let key = ring.keys.first else {
            let variable = "PAYHOOK_\(provider.rawValue.uppercased())_" + (account.map { Configuration.accountKey($0) + "_" } ?? "")
                + Configuration.keyRingSuffix(provider)
            if account != nil {
                return usageError("--account \(account ?? ""): no key ring configured for it; set \(variable)")
            }
            return fail("no \(provider.rawValue) key ring configured: set \(variable) as for payhook serve")
        }

        // Without configured account names the bodies name the emulator's, as in the demo.
        let input = SendTestInput(
            reference: parsed.values["--reference"] ?? SendTestIDs.reference(), amount: amount, id: parsed.values["--id"],
            key: key, pxpAlgorithm: configuration.pxp.algorithm,
            adyenMerchantAccount: configuration.providerAPIs.adyenMerchantAccount ?? "PayhookECOM",
            pxpMerchant: configuration.providerAPIs.pxpMerchant ?? "PAYHOOK-1",
            pxpSite: configuration.providerAPIs.pxpSite ?? "SITE-EU", now: Date())
        let http = CurlHTTPClient(maxConcurrent: 2)
        defer { http.shutdown() }
        let verifiers = WebhookVerifiers(configuration: configuration)
        var failures = 0
        for _ in 0..<count {
            var fresh = input
            fresh.now = Date()
            if parsed.values["--reference"] == nil, count > 1 { fresh.reference = SendTestIDs.reference() }
            switch await send(event, fresh, to: target, account: account, emulator: emulator, verifiers: verifiers, http: http,
                              json: parsed.flags.contains("--json")) {
            case .success(let ok): failures += ok ? 0 : 1
            case .failure(let failure): return fail(failure.message)
            }
        }
        return failures == 0 ? 0 : 1
    }

    /// Builds, checks, seeds and posts one event, then prints what happened. `true` for a 2xx;
    /// a failure stops the run (the target or the emulator cannot be reached, or a bug).
    private func send(
        _ event: SendTestEvent, _ input: SendTestInput, to base: URL, account: String?, emulator: URL?,
        verifiers: WebhookVerifiers, http: any HTTPClient, json: Bool
    ) async -> Result<Bool, Failure> {
        let delivery = event.build(input)
        let request = WebhookRequest(
            provider: event.provider, account: account, rawQuery: delivery.query,
            headers: delivery.headers.map { (name: $0.0, value: $0.1) }, body: delivery.body,
            remoteAddress: "127.0.0.1", receivedAt: input.now)
        let dedupKey: String
        switch verifiers.lookup(provider: event.provider, account: account) {
        case .verifier(let verifier):
            switch verifier.verify(request, now: input.now) {
            case .verified(let verified): dedupKey = verified.dedupKey
            case .rejected(let reason):
                return .failure(Failure("send-test built a delivery payhook's own verifier rejects (\(reason.rawValue)); this is a bug"))
            }
        case .unknownAccount, .notConfigured:
            return .failure(Failure("no verifier for this route; check the key ring variables"))
        }

        var seeded: String?
        if let emulator, let seed = delivery.seed {
            let url = emulator.appendingPathComponent(Self.emulatorSeedPath + seed.path)
            do {
                let answer = try await http.send(HTTPClientRequest(
                    method: "PUT", url: url, headers: [("Content-Type", "application/json")], body: seed.body, timeout: .seconds(10)))
                guard answer.status == 201 else {
                    return .failure(Failure("the emulator at \(emulator.absoluteString) refused to serve \(seed.path): HTTP \(answer.status) \(Self.printable(answer.body))"))
                }
                seeded = seed.path
            } catch {
                return .failure(Failure("cannot reach the emulator at \(emulator.absoluteString): \(error.message)"))
            }
        }

        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)
        if !delivery.query.isEmpty {
            let existing = components?.percentEncodedQuery
            components?.percentEncodedQuery = [existing, delivery.query].compactMap { $0 }.joined(separator: "&")
        }
        guard let url = components?.url else { return .failure(Failure("cannot build a URL from \(base.absoluteString)")) }
        let answer: HTTPClientResponse
        do {
            answer = try await http.send(HTTPClientRequest(
                method: "POST", url: url, headers: delivery.headers, body: delivery.body, timeout: .seconds(30)))
        } catch {
            return .failure(Failure("cannot reach payhook at \(url.absoluteString): \(error.message)"))
        }
        if json {
            // One object per line, so `--count N --json` is JSON Lines.
            output.print(JSONOutput.object([
                .init("provider", .string(event.provider.rawValue)), .init("event", .string(event.name)),
                .init("url", .string(url.absoluteString)), .init("status", .int(Int64(answer.status))),
                .init("answer", .string(Self.printable(answer.body))), .init("dedup_key", .string(dedupKey)),
                .init("ids", .object(delivery.ids.map { JSONOutput.Member($0.0, .string($0.1)) })),
                .init("emulator_seeded", .optional(seeded)),
            ]).rendered)
        } else {
            output.print("\(event.provider.rawValue) \(event.name) -> POST \(url.absoluteString)")
            output.print("  answer: \(answer.status) \(Self.printable(answer.body))")
            output.print("  dedup key: \(dedupKey)")
            output.print("  ids: " + delivery.ids.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
            if let seeded { output.print("  emulator serves: \(seeded)") }
        }
        return .success((200..<300).contains(answer.status))
    }

    struct Failure: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    /// `--amount MINOR CURRENCY`, or the provider's default.
    static func parseAmount(_ words: [String]?, default fallback: (minorUnits: Int64, currency: String)) -> Result<Money, AmountProblem> {
        guard let words else {
            return (try? Money(minorUnits: fallback.minorUnits, currency: fallback.currency)).map { .success($0) }
                ?? .failure(AmountProblem("--amount: no default for this provider"))
        }
        guard let minorUnits = Int64(words[0]), minorUnits > 0 else {
            return .failure(AmountProblem("--amount needs a positive whole number of minor units (1999 for 19.99), got '\(words[0])'"))
        }
        let currency = words[1]
        guard currency.count == 3, currency.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
            return .failure(AmountProblem("--amount needs an ISO 4217 currency code such as EUR, got '\(currency)'"))
        }
        do {
            return .success(try Money(minorUnits: minorUnits, currency: currency))
        } catch {
            return .failure(AmountProblem("--amount: \(error)"))
        }
    }

    struct AmountProblem: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    private func printList(json: Bool) {
        if json {
            output.print(JSONOutput.array(SendTestEvent.all.map { event in
                .object([.init("provider", .string(event.provider.rawValue)), .init("event", .string(event.name)),
                         .init("summary", .string(event.summary))])
            }).rendered)
            return
        }
        var text = "events payhook send-test can fire (PROVIDER EVENT):\n"
        for provider in ProviderID.allCases {
            text += "\n\(provider.rawValue)\n"
            for event in SendTestEvent.all where event.provider == provider {
                text += "  " + event.name.padding(toLength: 26, withPad: " ", startingAt: 0) + event.summary + "\n"
            }
        }
        output.print(text, terminator: "")
    }

    /// The ingress as a local client reaches it: a wildcard listen address means this host.
    private static func defaultTarget(_ configuration: Configuration) -> URL? {
        let scheme = configuration.tlsCertificatePath == nil ? "http" : "https"
        var host = configuration.listen.host
        switch host {
        case "", "0.0.0.0", "*": host = "127.0.0.1"
        case "::", "[::]": host = "[::1]"
        default: if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        }
        return URL(string: "\(scheme)://\(host):\(configuration.listen.port)")
    }

    private static func httpURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty
        else { return nil }
        return url
    }

    /// An answer body as one short line of text.
    private static func printable(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(200), as: UTF8.self)
            .map { $0.isNewline || $0 == "\t" ? " " : $0 }
            .filter { !($0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false) }
        return String(text).trimmingCharacters(in: .whitespaces) + (body.count > 200 ? "…" : "")
    }
}
