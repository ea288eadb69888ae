import Foundation
import PayhookCore
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Testing

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
