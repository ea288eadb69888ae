import Foundation
import PayhookCore
import Synchronization
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Testing

/// Method, media type and size limits, and one slow or oversized client never holding up a
/// genuine delivery.
@Suite("Ingress limits", .timeLimit(.minutes(5)))
struct IngressLimitsTests {
    @Test("GET on a webhook route is answered 405 with Allow: POST")
    func getIsNotAllowed() async throws {
        try await IngressHarness.with("limits_method") { (ingress) async throws in
            let response = try await ingress.get("/webhooks/adyen")
            #expect(response.status == 405)
            #expect(response.headers["allow"] == "POST")
        }
    }

    @Test("a text/plain body is answered 415 and not stored, even when correctly signed")
    func textPlainIsUnsupported() async throws {
        try await IngressHarness.with("limits_media") { (ingress) async throws in
            let delivery = Sign.pxp().with(header: "Content-Type", "text/plain")
            let response = try await ingress.post(delivery)
            #expect(response.status == 415, "\(response)")
            #expect(try await ingress.database.inboundCount(body: delivery.body) == 0)
        }
    }

    @Test("a body over PAYHOOK_MAX_BODY_BYTES is answered 413 while a concurrent valid delivery gets 200")
    func oversizedBody() async throws {
        try await IngressHarness.with("limits_size", overrides: ["PAYHOOK_MAX_BODY_BYTES": "2048"]) { (ingress) async throws in
            let port = ingress.port
            // The oversized request is started first (headers only, announcing 8 KiB) and is
            // still open when the valid delivery is sent.
            let connection = try #require(RawTestConnection(port: port))
            let head = "POST /webhooks/pxp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 8192\r\nConnection: close\r\n\r\n"
            #expect(connection.send(head))

            let valid = Sign.pxp()
            #expect(try await ingress.post(valid).status == 200)

            // The body is never sent: the announced length alone is refused.
            let oversized = await HTTPTestClient.offPool { connection.readResponse() }
            #expect(oversized?.status == 413, "\(String(describing: oversized))")
            #expect(try await ingress.database.inboundRows(dedupKey: valid.expectedDedupKey).count == 1)

            // A signed delivery just over the limit is refused the same way, and not stored.
            let signedBig = Sign.pxp(body: Array("{\"pad\":\"\(String(repeating: "y", count: 2100))\"}".utf8))
            #expect(try await ingress.post(signedBig).status == 413)
            #expect(try await ingress.database.inboundCount(body: signedBig.body) == 0)
        }
    }

    @Test("clients stalled mid-headers do not hold up a concurrent valid delivery")
    func slowClientsDoNotBlock() async throws {
        try await IngressHarness.with("limits_slow") { (ingress) async throws in
            // Several stalled connections: the one event-loop thread must keep serving others.
            var stalled: [RawTestConnection] = []
            for _ in 0..<8 {
                let connection = try #require(RawTestConnection(port: ingress.port))
                #expect(connection.send("POST /webhooks/adyen HTTP/1.1\r\nHost: x\r\nContent-Type: appl"))
                stalled.append(connection)
            }
            for delivery in [Sign.adyen(), Sign.mercadoPago(), Sign.pxp()] {
                let response = try await ingress.post(delivery)
                #expect(response.status == 200, "\(delivery.provider): \(response)")
            }
            withExtendedLifetime(stalled) {}
        }
    }

    @Test("an unknown provider or a path outside /webhooks is 404")
    func unknownRoutes() async throws {
        try await IngressHarness.with("limits_routes") { (ingress) async throws in
            let stray = Sign.pxp().with(route: "/webhooks/stripe")
            #expect(try await ingress.post(stray).status == 404)
            #expect(try await ingress.post(Sign.pxp().with(route: "/hooks/pxp")).status == 404)
            #expect(try await ingress.database.query("SELECT count(*) AS n FROM inbound_events").rows[0].decode("n", as: Int.self) == 0)
        }
    }
}

/// One client address cannot take the ingress offline for the others (issue 24).
@Suite("Ingress under hostile load", .timeLimit(.minutes(5)))
struct IngressHostileLoadTests {
    @Test("a client holding more half-open connections than its limit keeps only its share; another address is served")
    func halfOpenConnectionsPerClient() async throws {
        let overrides: [String: String?] = ["PAYHOOK_MAX_CONNECTIONS": "24", "PAYHOOK_MAX_CONNECTIONS_PER_IP": "8"]
        try await IngressHarness.with("hostile_halfopen", overrides: overrides) { (ingress) async throws in
            let port = ingress.port
            // 30 connections from 127.0.0.1, each stopping in the middle of its header block:
            // more than the global limit, so without a per-address limit nobody else gets in.
            let attacker: [RawTestConnection] = try (0..<30).map { _ in
                let connection = try #require(RawTestConnection(port: port, timeoutSeconds: 3))
                connection.send("POST /webhooks/adyen HTTP/1.1\r\nHost: x\r\nContent-Type: app")
                return connection
            }
            // The server closes what is over the limit at once; the ones it keeps wait for the
            // request deadline (10 s), so the 3 s receive timeout ends their wait instead.
            let closed = await withTaskGroup(of: Bool.self) { group in
                for connection in attacker { group.addTask { await HTTPTestClient.offPool { connection.awaitClose() } } }
                return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(closed == 22, "connections the server kept: \(30 - closed)")

            // Meanwhile a second client on another loopback address is served.
            let health = await HTTPTestClient.send(port: port, method: "GET", path: "/healthz", source: "127.0.0.2")
            #expect(health?.status == 200)
            let delivery = Sign.adyen()
            let stored = await HTTPTestClient.send(port: port, path: delivery.path, headers: delivery.headers,
                                                   body: delivery.body, source: "127.0.0.2")
            #expect(stored?.status == 200)
            withExtendedLifetime(attacker) {}
        }
    }

    @Test("a flood of bad signatures leaves a bounded number of rows, every refusal counted, and a new source's first kept")
    func badSignatureFlood() async throws {
        let overrides: [String: String?] = [
            "PAYHOOK_REJECTED_RECORD_BURST": "5", "PAYHOOK_REJECTED_RECORD_PER_MINUTE": "0",
            "PAYHOOK_REJECTED_RECORD_MAX_PER_SECOND": "1000",
        ]
        let lines = Mutex<[String]>([])
        let logger = Logger(minimumLevel: .warning) { line in lines.withLock { $0.append(line) } }
        try await IngressHarness.with("hostile_flood", overrides: overrides, logger: logger) { (ingress) async throws in
            let flood = (0..<200).map { _ in Sign.adyen(hexKey: TestSecrets.adyenAcmeEU) }
            let statuses = await withTaskGroup(of: Int.self) { group in
                var statuses: [Int] = []
                for (index, delivery) in flood.enumerated() {
                    if index >= 20, let status = await group.next() { statuses.append(status) }  // 20 at a time
                    group.addTask { await ingress.send(delivery)?.status ?? -1 }
                }
                for await status in group { statuses.append(status) }
                return statuses
            }
            #expect(statuses == Array(repeating: 401, count: 200))
            // Another address: its first refusal is kept although 127.0.0.1 has used its burst.
            let other = Sign.adyen(hexKey: TestSecrets.adyenAcmeEU)
            let otherStatus = await HTTPTestClient.send(port: ingress.port, path: other.path, headers: other.headers,
                                                        body: other.body, source: "127.0.0.2")
            #expect(otherStatus?.status == 401)

            let metrics = try await ingress.get("/metrics", admin: true, headers: [("Authorization", "Bearer \(TestSecrets.adminToken)")]).text
            #expect(metricValue(metrics, "payhook_deliveries_rejected_total", #"provider="adyen",reason="signature_mismatch""#) == 201)
            #expect(metricValue(metrics, "payhook_rejected_deliveries_held_back_total", #"provider="adyen""#) == 195)
            var rows = -1
            let written = await eventually(timeout: .seconds(10)) {
                rows = (try? await ingress.database.query("SELECT count(*) AS n FROM rejected_deliveries").rows[0].decode("n", as: Int.self)) ?? -1
                return rows >= 6
            }
            #expect(written, "rows: \(rows)")
            #expect(rows == 6)
            let sources = try await ingress.database.query(
                "SELECT remote_addr, count(*) AS n FROM rejected_deliveries GROUP BY 1 ORDER BY 1"
            ).map { "\(try $0.decode("remote_addr", as: String.self))=\(try $0.decode("n", as: Int.self))" }
            #expect(sources == ["127.0.0.1=5", "127.0.0.2=1"])
            // Summary lines, at most one per provider every 10 s, not one per refusal (195 here).
            let summaries = lines.withLock { $0 }.filter { $0.contains("rejected deliveries not recorded") }
            #expect((1..<10).contains(summaries.count), "\(summaries.count) summary lines")
            #expect(summaries.first?.contains(#""provider":"adyen""#) == true)
        }
    }

    @Test("with an allow-list, a provider's route refuses other addresses with 403 and serves listed ones")
    func providerAllowList() async throws {
        try await IngressHarness.with("hostile_allow", overrides: ["PAYHOOK_PXP_ALLOWED_CIDRS": "127.0.0.2/32"]) { (ingress) async throws in
            let refused = Sign.pxp()
            #expect(try await ingress.post(refused).status == 403)
            #expect(try await ingress.database.inboundCount(body: refused.body) == 0)
            let listed = Sign.pxp()
            let answer = await HTTPTestClient.send(port: ingress.port, path: listed.path, headers: listed.headers,
                                                   body: listed.body, source: "127.0.0.2")
            #expect(answer?.status == 200)
            // Providers without a list are not affected.
            #expect(try await ingress.post(Sign.adyen()).status == 200)
            #expect(try await ingress.awaitRejected(refused.body).map(\.reason) == ["address_not_allowed"])
        }
    }

    @Test("a webhook body trickled in past PAYHOOK_REQUEST_TIMEOUT_SECONDS is cut off, counted, and never stored")
    func slowWebhookBodyCutOff() async throws {
        let overrides: [String: String?] = ["PAYHOOK_REQUEST_TIMEOUT_SECONDS": "1", "PAYHOOK_IDLE_TIMEOUT_SECONDS": "60"]
        try await IngressHarness.with("hostile_slowbody", overrides: overrides) { (ingress) async throws in
            let delivery = Sign.pxp()
            let connection = try #require(RawTestConnection(port: ingress.port, timeoutSeconds: 30))
            var head = "POST \(delivery.path) HTTP/1.1\r\nHost: x\r\nContent-Length: \(delivery.body.count)\r\n"
            for (name, value) in delivery.headers { head += "\(name): \(value)\r\n" }
            connection.send(head + "\r\n")
            let body = delivery.body
            let sent = await HTTPTestClient.offPool { () -> Int in
                // One byte every 100 ms: the whole body would take tens of seconds.
                var sent = 0
                while sent < body.count, connection.send([body[sent]]) {
                    sent += 1
                    usleep(100_000)
                }
                return sent
            }
            #expect(sent < delivery.body.count, "the whole body was accepted")
            #expect(await HTTPTestClient.offPool { connection.awaitClose() })
            let metrics = try await ingress.get("/metrics", admin: true, headers: [("Authorization", "Bearer \(TestSecrets.adminToken)")]).text
            #expect(metricValue(metrics, "payhook_ingress_requests_cut_off_total", "") == 1)
            #expect(try await ingress.database.inboundCount(body: delivery.body) == 0)
        }
    }
}
