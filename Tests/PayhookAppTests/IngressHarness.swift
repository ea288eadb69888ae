import Foundation
import PayhookCore
import PayhookPostgres
import PayhookTestSupport
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Testing

/// A stored `inbound_events` row, as the tests look at it.
struct InboundRow: Sendable {
    let provider: String
    let account: String
    let dedupKey: String
    let query: String
    let body: [UInt8]
    let status: String
    let headers: String
}

/// A stored `rejected_deliveries` row.
struct RejectedRow: Sendable {
    let provider: String
    let account: String
    let reason: String
    let bodySize: Int
    let body: [UInt8]
}

extension TestDatabase {
    /// A schema with nothing in it: no migrations applied.
    static func empty(_ label: String) async throws -> TestDatabase {
        let base = try baseURL()
        let schema = "t_\(label)_\(UInt32.random(in: 0...UInt32.max))"
        let connection = try await PostgresConnection.connect(base)
        defer { connection.close() }
        _ = try await connection.query("CREATE SCHEMA \(schema)")
        return TestDatabase(schema: schema, url: withSearchPath(base, schema: schema))
    }

    /// One statement on a connection of its own (closed afterwards).
    @discardableResult
    func query(_ sql: String, _ binds: [PostgresValue] = []) async throws -> PostgresRows {
        let connection = try await PostgresConnection.connect(url)
        defer { connection.close() }
        return try await connection.query(sql, binds)
    }

    func inboundRows(dedupKey: String) async throws -> [InboundRow] {
        try await Self.inboundRows(url: url, where: "dedup_key = $1", [.text(dedupKey)])
    }

    static func inboundRows(url: String, where condition: String, _ binds: [PostgresValue]) async throws -> [InboundRow] {
        let connection = try await PostgresConnection.connect(url)
        defer { connection.close() }
        return try await connection.query(
            "SELECT provider, account, dedup_key, query, body, status, headers::text AS headers FROM inbound_events WHERE \(condition) ORDER BY id",
            binds
        ).map { row in
            InboundRow(
                provider: try row.decode("provider"), account: try row.decode("account"), dedupKey: try row.decode("dedup_key"),
                query: try row.decode("query"), body: try row.decode("body"), status: try row.decode("status"),
                headers: try row.decode("headers"))
        }
    }

    /// Inbound rows whose body is exactly `body` (for deliveries that must not be stored).
    func inboundCount(body: [UInt8]) async throws -> Int {
        try await query("SELECT count(*) AS n FROM inbound_events WHERE body = $1", [.bytea(body)]).rows.first!.decode("n")
    }

    /// Rejected rows whose stored (possibly truncated) body is a prefix of `body`.
    func rejectedRows(bodyPrefixOf body: [UInt8]) async throws -> [RejectedRow] {
        let prefix = Array(body.prefix(RejectedDeliveryRecorder.maxStoredBodyBytes))
        return try await query(
            "SELECT provider, account, reason, body_size, body FROM rejected_deliveries WHERE body = $1 ORDER BY id",
            [.bytea(prefix)]
        ).map { row in
            RejectedRow(
                provider: try row.decode("provider"), account: try row.decode("account"), reason: try row.decode("reason"),
                bodySize: try row.decode("body_size"), body: try row.decode("body"))
        }
    }
}

/// An in-process `PayhookServer` on ephemeral ports against its own schema.
struct IngressHarness: Sendable {
    let database: TestDatabase
    let server: PayhookServer
    var port: Int { server.ingressPort }
    var adminPort: Int { server.adminPort }

    /// Starts a server with `TestSecrets.environment` plus `overrides` (a `nil` value removes a
    /// variable), runs `body`, then shuts the server down gracefully, also when `body` throws.
    static func with(
        _ label: String, overrides: [String: String?] = [:], database given: TestDatabase? = nil,
        databaseURL: String? = nil, logger: Logger = .silent,
        readFile: @escaping (String) throws -> String = { _ in throw CocoaError(.fileNoSuchFile) },
        _ body: (IngressHarness) async throws -> Void
    ) async throws {
        var environment = TestSecrets.environment
        for (name, value) in overrides { environment[name] = value }
        let configuration = try Configuration.parse(environment: environment, readFile: readFile)
        let database: TestDatabase
        if let given {
            database = given
        } else {
            database = try await TestDatabase.migrated(label)
        }
        let server = try PayhookServer(configuration: configuration, databaseURL: databaseURL ?? database.url, logger: logger,
                                       roles: [.ingress])
        let shutdown = Latch()
        let running = Task { try await server.run(until: { await shutdown.wait() }) }
        let harness = IngressHarness(database: database, server: server)
        do {
            let started = await eventually(timeout: .seconds(10)) { server.ingressPort != 0 && server.adminPort != 0 }
            try #require(started, "server did not start listening")
            try await body(harness)
        } catch {
            shutdown.open()
            _ = try? await running.value
            throw error
        }
        shutdown.open()
        try await running.value
    }

    func send(_ delivery: SignedDelivery) async -> HTTPTestResponse? {
        await HTTPTestClient.send(port: port, path: delivery.path, headers: delivery.headers, body: delivery.body)
    }

    /// Sends and requires an answer (a missing answer is a failure of its own).
    func post(_ delivery: SignedDelivery, sourceLocation: SourceLocation = #_sourceLocation) async throws -> HTTPTestResponse {
        try #require(await send(delivery), "no HTTP response for \(delivery.path)", sourceLocation: sourceLocation)
    }

    func get(_ path: String, admin: Bool = false, headers: [(String, String)] = []) async throws -> HTTPTestResponse {
        try #require(await HTTPTestClient.send(port: admin ? adminPort : port, method: "GET", path: path, headers: headers))
    }

    /// Waits (bounded) for the rejection recorder, which writes after the 401 was sent.
    func awaitRejected(_ body: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) async throws -> [RejectedRow] {
        var rows: [RejectedRow] = []
        let recorded = await eventually(timeout: .seconds(10)) {
            rows = (try? await database.rejectedRows(bodyPrefixOf: body)) ?? []
            return !rows.isEmpty
        }
        #expect(recorded, "no rejected_deliveries row was recorded", sourceLocation: sourceLocation)
        return rows
    }
}

/// A metric sample's value from Prometheus text, `nil` when absent.
func metricValue(_ text: String, _ name: String, _ labels: String) -> Double? {
    let prefix = labels.isEmpty ? name + " " : "\(name){\(labels)} "
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
    return Double(line.dropFirst(prefix.count))
}
