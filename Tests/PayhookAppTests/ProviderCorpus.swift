import Foundation
import PayhookCore
import PayhookCrypto
import PayhookEmulator
import PayhookHTTP
import PayhookPostgres
import PayhookProviders
import PayhookQueue
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
@testable import PayhookCallbacks

/// One provider lifecycle from `Fixtures/providers/<provider>/<case>.json`, parsed strictly:
/// every key the format does not define is an error, so a misspelled expectation can never pass
/// by being ignored. The format is described in `Fixtures/providers/FORMAT.md`.
struct CorpusCase: Sendable {
    struct Order: Sendable {
        var merchantReference: String?
        var providerOrderID: String?
        var amountMinor: Int64
        var currency: String
    }

    enum Step: Sendable {
        /// A provider API answer the emulator serves from now on.
        case seed(collection: String, id: String, body: JSONValue)
        /// A webhook the provider sends, signed by the runner; the answer must have `expectStatus`.
        case deliver(body: JSONValue, query: String?, expectStatus: Int)
    }

    /// What must hold once every step ran. Rows are compared by column name: a key of
    /// `payments[]`, `orders[]`, `order` or `vault_tokens[]` is a column of that table.
    struct Expectation: Sendable {
        var payments: [JSONObject]?
        var orders: [JSONObject]?
        var order: JSONObject?
        var vaultTokens: [JSONObject]?
        var callbacks: [String]?
        var deadLetters: Int?
        var deadLetterReasons: [String]?
    }

    var name: String
    var provider: ProviderID
    var sources: [String]
    var account: String?
    var order: Order?
    var steps: [Step]
    var expect: Expectation

    struct FormatError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static let topLevelKeys = ["name", "provider", "sources", "notes", "account", "order", "steps", "expect"]
    static let orderKeys = ["reference", "provider_order_id", "amount_minor", "currency"]
    static let seedKeys = ["collection", "id", "body"]
    static let deliverKeys = ["body", "query", "expect_status"]
    static let expectKeys = ["payments", "orders", "order", "vault_tokens", "callbacks", "dead_letters", "dead_letter_reasons"]

    static func parse(_ bytes: [UInt8]) throws(FormatError) -> CorpusCase {
        guard case .object(let root)? = JSONValue.parse(bytes) else { throw FormatError("the case is not a JSON object") }
        try onlyKeys(root, topLevelKeys, at: "")
        guard case .string(let name)? = root["name"], !name.isEmpty else { throw FormatError("name: a non-empty string is required") }
        guard case .string(let providerText)? = root["provider"], let provider = ProviderID(rawValue: providerText) else {
            throw FormatError("provider: one of \(ProviderID.allCases.map(\.rawValue).joined(separator: ", ")) is required")
        }
        let sources = try strings(root["sources"], at: "sources")
        guard !sources.isEmpty else { throw FormatError("sources: name at least one page or SDK file the case comes from") }
        switch root["notes"] {
        case nil, .string?: break
        default: throw FormatError("notes: a string")
        }
        let account: String?
        switch root["account"] {
        case nil, .null?: account = nil
        case .string(let text)? where !text.isEmpty: account = text
        default: throw FormatError("account: a non-empty string or null")
        }
        let order: Order?
        switch root["order"] {
        case nil, .null?: order = nil
        case .object(let object)?:
            try onlyKeys(object, orderKeys, at: "order.")
            guard let amount = object["amount_minor"]?.exactInteger, amount > 0 else {
                throw FormatError("order.amount_minor: a positive integer (ISO 4217 minor units)")
            }
            guard case .string(let currency)? = object["currency"] else { throw FormatError("order.currency: a string") }
            let reference = try optionalString(object["reference"], at: "order.reference")
            let providerOrderID = try optionalString(object["provider_order_id"], at: "order.provider_order_id")
            guard reference != nil || providerOrderID != nil else {
                throw FormatError("order: reference or provider_order_id is required")
            }
            order = Order(merchantReference: reference, providerOrderID: providerOrderID, amountMinor: amount, currency: currency)
        default: throw FormatError("order: an object or null")
        }
        guard case .array(let stepValues)? = root["steps"], !stepValues.isEmpty else {
            throw FormatError("steps: a non-empty array")
        }
        var steps: [Step] = []
        for (index, value) in stepValues.enumerated() {
            let at = "steps[\(index)]"
            guard case .object(let step) = value, step.members.count == 1, let kind = step.members.first else {
                throw FormatError("\(at): an object with exactly one of seed, deliver")
            }
            guard case .object(let details) = kind.value else { throw FormatError("\(at).\(kind.key): an object") }
            switch kind.key {
            case "seed":
                try onlyKeys(details, seedKeys, at: "\(at).seed.")
                guard case .string(let collection)? = details["collection"], case .string(let id)? = details["id"],
                      case .object? = details["body"], let body = details["body"] else {
                    throw FormatError("\(at).seed: collection (string), id (string) and body (object) are required")
                }
                steps.append(.seed(collection: collection, id: id, body: body))
            case "deliver":
                try onlyKeys(details, deliverKeys, at: "\(at).deliver.")
                guard let body = details["body"] else { throw FormatError("\(at).deliver.body is required") }
                let query = try optionalString(details["query"], at: "\(at).deliver.query")
                var status = 200
                if let given = details["expect_status"] {
                    guard let number = given.exactInteger, (100...599).contains(number) else {
                        throw FormatError("\(at).deliver.expect_status: an HTTP status")
                    }
                    status = Int(number)
                }
                steps.append(.deliver(body: body, query: query, expectStatus: status))
            default:
                throw FormatError("\(at): unknown step \(kind.key); known: seed, deliver")
            }
        }
        guard case .object(let expectObject)? = root["expect"] else { throw FormatError("expect: an object is required") }
        try onlyKeys(expectObject, expectKeys, at: "expect.")
        guard !expectObject.members.isEmpty else { throw FormatError("expect: expect at least one thing") }
        var expect = Expectation()
        expect.payments = try rows(expectObject["payments"], at: "expect.payments", locatedBy: ["provider_payment_id"])
        expect.orders = try rows(expectObject["orders"], at: "expect.orders", locatedBy: ["provider_order_id", "merchant_reference"])
        expect.vaultTokens = try rows(expectObject["vault_tokens"], at: "expect.vault_tokens", locatedBy: ["token"])
        switch expectObject["order"] {
        case nil: break
        case .object(let object)?:
            guard order != nil else { throw FormatError("expect.order needs the case's order (the one the merchant registered)") }
            guard !object.members.isEmpty else { throw FormatError("expect.order: name at least one column") }
            expect.order = object
        default: throw FormatError("expect.order: an object")
        }
        if let callbacks = expectObject["callbacks"] { expect.callbacks = try strings(callbacks, at: "expect.callbacks") }
        if let letters = expectObject["dead_letters"] {
            guard let count = letters.exactInteger, count >= 0 else { throw FormatError("expect.dead_letters: a count") }
            expect.deadLetters = Int(count)
        }
        if let reasons = expectObject["dead_letter_reasons"] {
            expect.deadLetterReasons = try strings(reasons, at: "expect.dead_letter_reasons")
        }
        return CorpusCase(name: name, provider: provider, sources: sources, account: account, order: order, steps: steps,
                          expect: expect)
    }

    /// The admin API's registration of `order`, as the merchant would send it.
    func registration(_ order: Order) throws -> OrderRegistration {
        var members: [(key: String, value: JSONValue)] = [("provider", .string(provider.rawValue))]
        if let account { members.append(("account", .string(account))) }
        if let reference = order.merchantReference { members.append(("merchant_reference", .string(reference))) }
        if let id = order.providerOrderID { members.append(("provider_order_id", .string(id))) }
        members.append(("amount", .object(JSONObject([("value", .number(String(order.amountMinor))),
                                                      ("currency", .string(order.currency))]))))
        return try OrderRegistration.parse(Array(renderJSON(.object(JSONObject(members))).utf8))
    }

    private static func onlyKeys(_ object: JSONObject, _ known: [String], at path: String) throws(FormatError) {
        for key in object.keys where !known.contains(key) {
            throw FormatError("\(path)\(key): unknown key; known: \(known.joined(separator: ", "))")
        }
    }

    private static func optionalString(_ value: JSONValue?, at path: String) throws(FormatError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)? where !text.isEmpty: return text
        default: throw FormatError("\(path): a non-empty string")
        }
    }

    private static func strings(_ value: JSONValue?, at path: String) throws(FormatError) -> [String] {
        guard case .array(let items)? = value else { throw FormatError("\(path): an array of strings") }
        var texts: [String] = []
        for item in items {
            guard case .string(let text) = item else { throw FormatError("\(path): an array of strings") }
            texts.append(text)
        }
        return texts
    }

    private static func rows(_ value: JSONValue?, at path: String, locatedBy keys: [String]) throws(FormatError) -> [JSONObject]? {
        guard let value else { return nil }
        guard case .array(let items) = value else { throw FormatError("\(path): an array of objects") }
        var objects: [JSONObject] = []
        for (index, item) in items.enumerated() {
            guard case .object(let object) = item, keys.contains(where: { object[$0] != nil }) else {
                throw FormatError("\(path)[\(index)]: an object with \(keys.joined(separator: " or "))")
            }
            objects.append(object)
        }
        return objects
    }
}

/// Where the corpus lives in the test bundle, and its case files.
enum ProviderCorpus {
    static var root: URL {
        get throws {
            try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil)).appendingPathComponent("providers")
        }
    }

    /// Every `<provider>/<case>.json`, sorted; a new file is a new test without code.
    static func caseFiles() -> [String] {
        guard let root = try? root,
              let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        var files: [String] = []
        for case let url as URL in enumerator where url.pathExtension == "json" {
            files.append(url.path.replacingOccurrences(of: root.path + "/", with: ""))
        }
        return files.sorted()
    }

    static func load(_ file: String) throws -> CorpusCase {
        let bytes = Array(try Data(contentsOf: try root.appendingPathComponent(file)))
        let parsed = try CorpusCase.parse(bytes)
        let folder = file.split(separator: "/").first.map(String.init)
        guard folder == parsed.provider.rawValue else {
            throw CorpusCase.FormatError("provider \(parsed.provider.rawValue) is filed under \(folder ?? "no folder")")
        }
        return parsed
    }
}

/// Renders a parsed value back to compact JSON: member order and numbers' text as written, so a
/// PXP `100.10` or a Mercado Pago id reaches ingress digit for digit.
func renderJSON(_ value: JSONValue) -> String {
    switch value {
    case .object(let object):
        "{" + object.members.map { JSONString.quote($0.key) + ":" + renderJSON($0.value) }.joined(separator: ",") + "}"
    case .array(let items): "[" + items.map(renderJSON).joined(separator: ",") + "]"
    case .string(let text): JSONString.quote(text)
    case .number(let text): text
    case .bool(let flag): flag ? "true" : "false"
    case .null: "null"
    }
}

/// Runs one case through the real path: signed HTTP deliveries into an in-process ingress,
/// the processor against the provider emulator (seeded over its HTTP seeding route), the
/// fulfillment and callback jobs against a merchant endpoint, all on a fresh schema. Then it
/// compares the tables with the case's expectation and returns every mismatch.
struct CorpusRunner {
    static let callbackSecret = "whsec_" + Base64.encode(Array("payhook-corpus-callback-key-32by".utf8))

    let testCase: CorpusCase

    /// The mismatches between what the case expects and what payhook stored; empty when it passed.
    func run() async throws -> [String] {
        let database = try await TestDatabase.migrated("corpus")
        let pool = PostgresPool(conninfo: database.url, maxConnections: 4)
        let emulator = try ProviderEmulator()
        try emulator.start()
        let endpoint = try MerchantEndpoint()
        defer {
            emulator.stop()
            endpoint.stop()
        }
        let http = CurlHTTPClient(maxConcurrent: 4)
        let clients = emulator.clients(http: http, timeout: .seconds(5))
        let queue = JobQueue(pool: pool, retryPolicy: RetryPolicy(base: .milliseconds(100), maximum: .milliseconds(400), jitter: 0))
        let fulfillment = FulfillmentSettings()
        var processorSettings = ProcessorSettings()
        // One attempt: a case whose event fails shows it as a dead letter at once instead of
        // retrying on a backoff the runner would have to wait out.
        processorSettings.maxAttempts = 1
        let processor = InboundEventProcessor(
            pool: pool, conninfo: database.url, clients: clients, hooks: .fulfillment(fulfillment, pool: pool).then(.subscriptions),
            settings: processorSettings, logger: .silent, now: { Date() }, jitter: { 0.5 })
        let handlers = [
            AnyJobHandler(FulfillOrderHandler(pool: pool, queue: queue, settings: fulfillment, metrics: MetricsRegistry(), logger: .silent)),
            AnyJobHandler(MerchantCallbackDelivery(
                pool: pool, http: http, signer: try StandardWebhookSigner(secret: Self.callbackSecret), defaultURL: endpoint.url,
                timeout: .seconds(5), metrics: MetricsRegistry(), logger: .silent)),
        ]

        var registeredOrderID: Int64?
        if let order = testCase.order {
            registeredOrderID = try await register(order, pool: pool, queue: queue, settings: fulfillment)
        }

        var mismatches: [String] = []
        var overrides: [String: String?] = [:]
        if let account = testCase.account {
            let name = "PAYHOOK_\(testCase.provider.rawValue.uppercased())_\(EnvironmentNames.accountKey(account))_"
                + EnvironmentNames.keyRingSuffix(testCase.provider)
            overrides[name] = signingKey
        }
        try await IngressHarness.with("corpus", overrides: overrides, database: database) { ingress in
            for (index, step) in testCase.steps.enumerated() {
                switch step {
                case .seed(let collection, let id, let body):
                    let path = ProviderEmulator.seedPathPrefix + "\(testCase.provider.rawValue)/\(collection)/\(id)"
                    let answer = try #require(await HTTPTestClient.send(
                        port: emulator.port, method: "PUT", path: path, headers: [("Content-Type", "application/json")],
                        body: Array(renderJSON(body).utf8)))
                    if answer.status != 201 { mismatches.append("steps[\(index)]: seeding \(path) answered \(answer)") }
                case .deliver(let body, let query, let expectStatus):
                    let delivery = try sign(body: body, query: query)
                    let answer = try await ingress.post(delivery)
                    if answer.status != expectStatus {
                        mismatches.append("steps[\(index)]: delivery answered \(answer), expected \(expectStatus)")
                    }
                    while try await processor.processBatch().claimed > 0 {}
                    try await runJobs(queue: queue, handlers: handlers, pool: pool)
                }
            }
        }
        mismatches += try await compare(pool: pool, registeredOrderID: registeredOrderID, endpoint: endpoint)
        return mismatches
    }

    // MARK: Orders and jobs

    private func register(_ order: CorpusCase.Order, pool: PostgresPool, queue: JobQueue,
                          settings: FulfillmentSettings) async throws -> Int64 {
        let service = OrderService(pool: pool, trigger: FulfillmentTrigger(queue: queue, settings: settings))
        return try await service.register(try testCase.registration(order)).order.id
    }

    /// Runs due jobs as a worker would until none is left; a job that asks to be retried is
    /// made due again, a bounded number of rounds (a fulfillment that keeps waiting stays so).
    private func runJobs(queue: JobQueue, handlers: [AnyJobHandler], pool: PostgresPool) async throws {
        let byKind = Dictionary(uniqueKeysWithValues: handlers.map { ($0.kind, $0) })
        for _ in 0..<5 {
            var ranAny = false
            while true {
                let jobs = try await queue.claim(limit: 20, kinds: byKind.keys.sorted(), worker: "corpus", lease: .seconds(60))
                if jobs.isEmpty { break }
                ranAny = true
                for job in jobs {
                    guard let handler = byKind[job.kind] else { continue }
                    let outcome: JobOutcome
                    do { outcome = try await handler.run(job) } catch { outcome = .retry(error: "\(error)") }
                    _ = try await queue.record(outcome, for: job)
                }
            }
            let later = try await pool.query(
                "UPDATE jobs SET run_at = now() WHERE state IN ('available', 'retryable') AND run_at > now() RETURNING id")
            if !ranAny && later.rows.isEmpty { return }
        }
    }

    // MARK: Signing

    /// The test key of the case's provider (the account's ring gets the same key).
    private var signingKey: String {
        switch testCase.provider {
        case .adyen: TestSecrets.adyen
        case .mercadopago: TestSecrets.mercadoPago
        case .pxp: TestSecrets.pxp
        }
    }

    private var route: String { "/webhooks/\(testCase.provider.rawValue)" + (testCase.account.map { "/\($0)" } ?? "") }

    /// Signs a documented body the way its provider does; the case file carries no signatures.
    func sign(body: JSONValue, query: String?) throws -> SignedDelivery {
        switch testCase.provider {
        case .adyen:
            let key = try Hex.decode(signingKey)
            if case .array(let items)? = body["notificationItems"] {
                // Standard notifications: each item's HMAC over its eight fields, in additionalData.
                var signedItems: [JSONValue] = []
                for item in items {
                    guard case .object(let request)? = item["NotificationRequestItem"] else {
                        signedItems.append(item)
                        continue
                    }
                    signedItems.append(.object(try replacing(item, key: "NotificationRequestItem",
                                                             with: .object(try signedAdyenItem(request, key: key)))))
                }
                let signed = JSONValue.object(try replacing(body, key: "notificationItems", with: .array(signedItems)))
                return delivery(body: Array(renderJSON(signed).utf8), query: query, headers: [])
            }
            // Tokenization and other webhooks: one HMAC over the raw body, in a header.
            let bytes = Array(renderJSON(body).utf8)
            return delivery(body: bytes, query: query,
                            headers: [("HmacSignature", WebhookSigner.adyenHeaderSignature(key: key, body: bytes))])
        case .mercadopago:
            let bytes = Array(renderJSON(body).utf8)
            let bodyID = body["data"]?["id"]?.scalarText
            let query = query ?? (bodyID.map { "data.id=\($0)&type=\(body["type"]?.scalarText ?? "payment")" } ?? "")
            let dataID = query.split(separator: "&").first { $0.hasPrefix("data.id=") }.map { String($0.dropFirst(8)) }
            let requestID = UUID().uuidString.lowercased()
            let ts = String(Int(Date().timeIntervalSince1970 * 1000))
            return delivery(body: bytes, query: query, headers: [
                ("x-request-id", requestID),
                ("x-signature", Sign.mercadoPagoSignature(secret: signingKey, dataID: dataID?.lowercased() ?? "",
                                                          requestID: requestID, ts: ts)),
            ])
        case .pxp:
            // The timestamp in PXP's own date form (seven fractional digits, as its eventDate):
            // what the header holds is undocumented, and ingress must read this form too.
            let millisecondText = JSONOutput.format(Date())
            let timestamp = millisecondText.dropLast() + "0000Z"
            var signed = Sign.pxp(key: signingKey, timestamp: String(timestamp), body: Array(renderJSON(body).utf8))
            signed.route = route
            signed.query = query ?? ""
            return signed
        }
    }

    private func delivery(body: [UInt8], query: String?, headers: [(String, String)]) -> SignedDelivery {
        SignedDelivery(provider: testCase.provider.rawValue, route: route, query: query ?? "",
                       headers: [("Content-Type", "application/json")] + headers, body: body, expectedDedupKey: "")
    }

    private func signedAdyenItem(_ item: JSONObject, key: [UInt8]) throws -> JSONObject {
        func text(_ name: String) -> String? { item[name]?.scalarText }
        let signing = WebhookSigner.adyenSigningString(
            pspReference: text("pspReference") ?? "", originalReference: text("originalReference"),
            merchantAccountCode: text("merchantAccountCode") ?? "", merchantReference: text("merchantReference") ?? "",
            value: item["amount"]?["value"]?.scalarText ?? "", currency: item["amount"]?["currency"]?.scalarText ?? "",
            eventCode: text("eventCode") ?? "", success: text("success") ?? "")
        let signature = JSONValue.string(WebhookSigner.adyenItemSignature(key: key, signingString: signing))
        var additional: [(key: String, value: JSONValue)] = []
        if case .object(let existing)? = item["additionalData"] { additional = existing.members.filter { $0.key != "hmacSignature" } }
        additional.append(("hmacSignature", signature))
        return try replacing(.object(item), key: "additionalData", with: .object(JSONObject(additional)))
    }

    /// `object` with member `key` set to `value` (appended when absent), order otherwise kept.
    private func replacing(_ object: JSONValue, key: String, with value: JSONValue) throws -> JSONObject {
        guard case .object(let members) = object else { throw CorpusCase.FormatError("\(key) belongs to an object") }
        var result = members.members
        if let index = result.firstIndex(where: { $0.key == key }) { result[index].value = value } else { result.append((key, value)) }
        return JSONObject(result)
    }

    // MARK: Comparing

    private func compare(pool: PostgresPool, registeredOrderID: Int64?, endpoint: MerchantEndpoint) async throws -> [String] {
        let expect = testCase.expect
        var mismatches: [String] = []
        if let payments = expect.payments {
            mismatches += try await compareRows(pool: pool, table: "payments", expected: payments, keys: ["provider_payment_id"])
        }
        if let orders = expect.orders {
            mismatches += try await compareRows(pool: pool, table: "orders", expected: orders,
                                                keys: ["provider_order_id", "merchant_reference"])
        }
        if let tokens = expect.vaultTokens {
            mismatches += try await compareRows(pool: pool, table: "vault_tokens", expected: tokens, keys: ["token"])
        }
        if let order = expect.order, let registeredOrderID {
            let rows = try await pool.query("SELECT row_to_json(o)::text AS row FROM orders o WHERE id = $1", [.int(registeredOrderID)])
            let row = try rows.rows.first.map { try $0.decode("row", as: String.self) }
            mismatches += compareColumns(order, row: row.flatMap { JSONValue.parse(Array($0.utf8)) }, label: "order (registered)")
        }
        if let callbacks = expect.callbacks {
            let stored = try await pool.query("SELECT type FROM merchant_callbacks ORDER BY id").map { try $0.decode("type", as: String.self) }
            if stored != callbacks { mismatches.append("callbacks: stored \(stored), expected \(callbacks)") }
            let received = endpoint.received.compactMap { JSONValue.parse($0.body)?["type"]?.scalarText }
            if received.sorted() != callbacks.sorted() {
                mismatches.append("callbacks: the merchant received \(received), expected \(callbacks)")
            }
        }
        let letters = try await pool.query("SELECT reason, error FROM dead_letters ORDER BY id").map {
            (reason: try $0.decode("reason", as: String.self), error: try $0.decode("error", as: String?.self) ?? "")
        }
        if let count = expect.deadLetters, letters.count != count {
            mismatches.append("dead_letters: \(letters.count), expected \(count): \(letters.map { "\($0.reason): \($0.error)" })")
        }
        if let reasons = expect.deadLetterReasons, letters.map(\.reason).sorted() != reasons.sorted() {
            mismatches.append("dead_letter_reasons: \(letters.map(\.reason)), expected \(reasons)")
        }
        return mismatches
    }

    /// Every expected row exists (found by the first locating key it has), its named columns
    /// hold the expected values, and the table has no other rows.
    private func compareRows(pool: PostgresPool, table: String, expected: [JSONObject], keys: [String]) async throws -> [String] {
        let rows = try await pool.query("SELECT row_to_json(t)::text AS row FROM \(table) t ORDER BY id")
            .map { try $0.decode("row", as: String.self) }
            .compactMap { JSONValue.parse(Array($0.utf8)) }
        var mismatches: [String] = []
        if rows.count != expected.count {
            let located = rows.map { row in keys.compactMap { row[$0]?.scalarText }.joined(separator: "/") }
            mismatches.append("\(table): \(rows.count) rows \(located), expected \(expected.count)")
        }
        for object in expected {
            guard let key = keys.first(where: { object[$0] != nil }), let value = object[key] else { continue }
            let row = rows.first { $0[key] == value }
            mismatches += compareColumns(object, row: row, label: "\(table) \(key)=\(value.scalarText ?? renderJSON(value))")
        }
        return mismatches
    }

    /// Compares named columns; a key that is not a column of the row is a mismatch of its own.
    private func compareColumns(_ expected: JSONObject, row: JSONValue?, label: String) -> [String] {
        guard case .object(let actual)? = row else { return ["\(label): no such row"] }
        var mismatches: [String] = []
        for (column, value) in expected.members {
            guard let stored = actual[column] else {
                mismatches.append("\(label): \(column) is not a column (columns: \(actual.keys.joined(separator: ", ")))")
                continue
            }
            if !Self.sameValue(stored, value) {
                mismatches.append("\(label): \(column) is \(renderJSON(stored)), expected \(renderJSON(value))")
            }
        }
        return mismatches
    }

    /// Equal JSON, with `char(n)` padding ignored and numbers compared by value where both
    /// are exact integers.
    static func sameValue(_ stored: JSONValue, _ expected: JSONValue) -> Bool {
        if let left = stored.exactInteger, let right = expected.exactInteger { return left == right }
        if case .string(let left) = stored, case .string(let right) = expected {
            return left.trimmingCharacters(in: .whitespaces) == right
        }
        return stored == expected
    }
}
