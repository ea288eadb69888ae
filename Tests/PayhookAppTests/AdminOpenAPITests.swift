import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions

/// The running admin listener checked against docs/admin-api.openapi.json: every answer's
/// status is documented for its operation and its JSON body matches the documented schema, and
/// every documented operation is exercised, so the document and the server cannot drift apart.
@Suite("Admin API matches its OpenAPI document", .timeLimit(.minutes(5)))
struct AdminOpenAPITests {
    static let documentURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/admin-api.openapi.json").standardized

    struct Call {
        let method: String
        let template: String
        let path: String
        var body: String? = nil
        var authorized = true
    }

    @Test("every documented operation answers with a documented status and a body that matches its schema")
    func serverMatchesDocument() async throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.documentURL)) as? [String: Any])
        let validator = SchemaValidator(document: document)
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented = Set<String>()
        for (path, operations) in paths { for method in operations.keys { documented.insert("\(method.uppercased()) \(path)") } }

        try await IngressHarness.with("admin_openapi") { (ingress) async throws in
            let inbound = try await ingress.database.seedDeadInbound()
            let job = try await ingress.database.seedDeadJob()
            let registration = FulfillmentHarness.registration("order-openapi")
            _ = try await ingress.database.query(
                "INSERT INTO vault_tokens (provider, token, shopper_reference) VALUES ('adyen', 'tok-openapi', 'shopper-openapi')")
            func subscription(_ reference: String, token: String = "tok-openapi") -> String {
                #"{"vault_token": {"provider": "adyen", "token": "\#(token)"}, "amount": {"value": 1999, "currency": "EUR"}, "#
                    + #""interval": {"every": 1, "unit": "month"}, "reference": "\#(reference)", "max_cycles": null}"#
            }
            var calls: [Call] = [
                Call(method: "POST", template: "/v1/orders", path: "/v1/orders", body: registration),
                Call(method: "POST", template: "/v1/orders", path: "/v1/orders", body: registration),
                Call(method: "POST", template: "/v1/orders", path: "/v1/orders",
                     body: FulfillmentHarness.registration("order-openapi", value: 5)),
                Call(method: "POST", template: "/v1/orders", path: "/v1/orders", body: #"{"provider": "adyen"}"#),
                Call(method: "POST", template: "/v1/orders", path: "/v1/orders", body: registration, authorized: false),
                Call(method: "GET", template: "/v1/orders/{id}", path: "/v1/orders/999999"),
                Call(method: "GET", template: "/v1/orders/{id}", path: "/v1/orders/abc"),
                Call(method: "GET", template: "/v1/dead-letters", path: "/v1/dead-letters"),
                Call(method: "GET", template: "/v1/dead-letters", path: "/v1/dead-letters?status=bogus"),
                Call(method: "GET", template: "/v1/dead-letters/{id}", path: "/v1/dead-letters/\(inbound.letter)"),
                Call(method: "GET", template: "/v1/dead-letters/{id}", path: "/v1/dead-letters/999999"),
                Call(method: "POST", template: "/v1/dead-letters/{id}/replay", path: "/v1/dead-letters/\(inbound.letter)/replay"),
                Call(method: "POST", template: "/v1/dead-letters/{id}/replay", path: "/v1/dead-letters/\(inbound.letter)/replay",
                     body: #"{"note": "provider back"}"#),
                Call(method: "POST", template: "/v1/dead-letters/{id}/discard", path: "/v1/dead-letters/\(job.letter)/discard"),
                Call(method: "POST", template: "/v1/dead-letters/{id}/discard", path: "/v1/dead-letters/\(job.letter)/discard",
                     body: #"{"note": "refunded by hand"}"#),
                Call(method: "POST", template: "/v1/subscriptions", path: "/v1/subscriptions", body: subscription("sub-openapi-1")),
                Call(method: "POST", template: "/v1/subscriptions", path: "/v1/subscriptions", body: subscription("sub-openapi-2")),
                Call(method: "POST", template: "/v1/subscriptions", path: "/v1/subscriptions", body: subscription("sub-openapi-1")),
                Call(method: "POST", template: "/v1/subscriptions", path: "/v1/subscriptions", body: subscription("sub-x", token: "nope")),
                Call(method: "POST", template: "/v1/subscriptions", path: "/v1/subscriptions", body: #"{"reference": "x"}"#),
                Call(method: "GET", template: "/v1/subscriptions", path: "/v1/subscriptions"),
                Call(method: "GET", template: "/v1/subscriptions", path: "/v1/subscriptions?status=sleeping"),
                Call(method: "GET", template: "/v1/subscriptions/{id}", path: "/v1/subscriptions/1"),
                Call(method: "GET", template: "/v1/subscriptions/{id}", path: "/v1/subscriptions/999999"),
                Call(method: "POST", template: "/v1/subscriptions/{id}/pause", path: "/v1/subscriptions/2/pause"),
                Call(method: "POST", template: "/v1/subscriptions/{id}/resume", path: "/v1/subscriptions/2/resume"),
                Call(method: "POST", template: "/v1/subscriptions/{id}/cancel", path: "/v1/subscriptions/1/cancel", body: #"{"note": "customer left"}"#),
                Call(method: "POST", template: "/v1/subscriptions/{id}/resume", path: "/v1/subscriptions/1/resume"),
                // No provider API client is configured here: VaultTokenRegistrationTests registers
                // against the emulator (201, 200, 409, 422 for an unknown token).
                Call(method: "POST", template: "/v1/vault-tokens", path: "/v1/vault-tokens",
                     body: #"{"provider": "adyen", "token": "tok-openapi-2", "shopper_reference": "shopper-openapi"}"#),
                Call(method: "POST", template: "/v1/vault-tokens", path: "/v1/vault-tokens",
                     body: #"{"provider": "mercadopago", "customer_id": "c-1", "token": "PP-1", "token_kind": "payment_profile"}"#),
                Call(method: "POST", template: "/v1/vault-tokens", path: "/v1/vault-tokens", body: #"{"provider": "visa"}"#),
                Call(method: "POST", template: "/v1/vault-tokens", path: "/v1/vault-tokens", body: "{}", authorized: false),
                Call(method: "GET", template: "/metrics", path: "/metrics"),
                Call(method: "GET", template: "/healthz", path: "/healthz"),
                Call(method: "GET", template: "/readyz", path: "/readyz"),
            ]
            // The order created by the first call, read back.
            let created = try await Self.send(ingress, calls[0])
            #expect(created.status == 201)
            let id = try #require((try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any])?["id"] as? Int)
            calls.append(Call(method: "GET", template: "/v1/orders/{id}", path: "/v1/orders/\(id)"))
            calls.removeFirst()

            var exercised = Set<String>()
            var statuses: [String: Set<Int>] = ["POST /v1/orders": [created.status]]
            for call in calls {
                let response = try await Self.send(ingress, call)
                let key = "\(call.method) \(call.template)"
                exercised.insert(key)
                statuses[key, default: []].insert(response.status)
                let operation = try #require(paths[call.template]?[call.method.lowercased()] as? [String: Any], "\(key) is not documented")
                let responses = try #require(operation["responses"] as? [String: Any])
                let documentedResponse = try #require(responses[String(response.status)] as? [String: Any],
                                                      "\(key) answered \(response.status), which is not documented")
                guard let content = documentedResponse["content"] as? [String: Any],
                      let json = content["application/json"] as? [String: Any], let schema = json["schema"] else { continue }
                let body = try JSONSerialization.jsonObject(with: Data(response.body), options: [.fragmentsAllowed])
                let problems = validator.validate(body, against: schema, at: "$")
                #expect(problems.isEmpty, "\(key) \(response.status): \(problems)")
            }
            #expect(exercised == documented, "documented but not exercised: \(documented.subtracting(exercised).sorted())")
            #expect(statuses["POST /v1/orders"] == [200, 201, 400, 401, 409])
            #expect(statuses["POST /v1/subscriptions"] == [201, 400, 404, 409])
            #expect(statuses["POST /v1/subscriptions/{id}/resume"] == [200, 409])
            #expect(statuses["POST /v1/vault-tokens"] == [400, 401, 422])
        }
    }

    static func send(_ ingress: IngressHarness, _ call: Call) async throws -> HTTPTestResponse {
        var headers = call.authorized ? DeadLetterAdminAPITests.auth : []
        if call.body != nil { headers.append(("Content-Type", "application/json")) }
        return try #require(await HTTPTestClient.send(port: ingress.adminPort, method: call.method, path: call.path,
                                                      headers: headers, body: Array((call.body ?? "").utf8)))
    }
}

/// The subset of OpenAPI 3.0 schema validation the admin document uses: `$ref`, `type`,
/// `nullable`, `properties`, `required`, `additionalProperties: false`, `items`, `enum`.
struct SchemaValidator {
    let document: [String: Any]

    func resolve(_ schema: Any) -> [String: Any] {
        guard let schema = schema as? [String: Any] else { return [:] }
        guard let reference = schema["$ref"] as? String else { return schema }
        var node: Any = document
        for part in reference.dropFirst(2).split(separator: "/") { node = (node as? [String: Any])?[String(part)] ?? [:] }
        return resolve(node)
    }

    func validate(_ value: Any, against rawSchema: Any, at path: String) -> [String] {
        let schema = resolve(rawSchema)
        if value is NSNull {
            return schema["nullable"] as? Bool == true ? [] : ["\(path) is null but not nullable"]
        }
        if let allowed = schema["enum"] as? [String], let text = value as? String, !allowed.contains(text) {
            return ["\(path) = \(text) is not one of \(allowed)"]
        }
        switch schema["type"] as? String {
        case "object":
            guard let object = value as? [String: Any] else { return ["\(path) is not an object"] }
            var problems: [String] = []
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for name in schema["required"] as? [String] ?? [] where object[name] == nil {
                problems.append("\(path).\(name) is required but missing")
            }
            for (name, member) in object {
                if let property = properties[name] {
                    problems += validate(member, against: property, at: "\(path).\(name)")
                } else if schema["additionalProperties"] as? Bool == false {
                    problems.append("\(path).\(name) is not documented")
                }
            }
            return problems
        case "array":
            guard let array = value as? [Any] else { return ["\(path) is not an array"] }
            return array.enumerated().flatMap { validate($0.element, against: schema["items"] ?? [:], at: "\(path)[\($0.offset)]") }
        case "string":
            return value is String ? [] : ["\(path) is not a string"]
        case "integer":
            // Foundation bridges JSON numbers and booleans alike; the rendered text tells them apart.
            let text = String(describing: value)
            return text.wholeMatch(of: /-?[0-9]+/) != nil ? [] : ["\(path) = \(text) is not an integer"]
        case "boolean":
            // On Linux a JSON `true` arrives as an NSNumber rendered `1`.
            let text = String(describing: value)
            return ["true", "false", "1", "0"].contains(text) ? [] : ["\(path) = \(text) is not a boolean"]
        default:
            return []
        }
    }
}
