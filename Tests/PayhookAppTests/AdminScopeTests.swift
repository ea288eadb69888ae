import Foundation
import PayhookCore
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Synchronization
import Testing
@testable import PayhookApp
@testable import PayhookConsole
@testable import PayhookAdmin

/// Test credentials: one of each scope, and the credentials file that holds them.
enum ScopedCredentials {
    static let tokens: [AdminScope: String] = [
        .merchant: "phk_merchant-token-for-tests", .operator: "phk_operator-token-for-tests", .metrics: "phk_metrics-token-for-tests",
    ]
    static let names: [AdminScope: String] = [.merchant: "shop-backend", .operator: "oncall-ops", .metrics: "prometheus"]
    static let path = "/test/payhook-admin-credentials"

    static var fileText: String {
        "# name scope hash\n" + AdminScope.allCases.map {
            AdminCredential(name: names[$0]!, scope: $0, token: tokens[$0]!).fileLine
        }.joined(separator: "\n") + "\n"
    }

    /// A reader that serves `fileText` at `path`, for in-process servers.
    static let readFile: @Sendable (String) throws -> String = { requested in
        guard requested == path else { throw CocoaError(.fileNoSuchFile) }
        return fileText
    }

    static let overrides: [String: String?] = ["PAYHOOK_ADMIN_CREDENTIALS_FILE": path]

    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }
}

/// Least privilege on the admin listener: every operation of the OpenAPI document against every
/// scope, the credentials file, and how refusals are answered, counted and logged.
@Suite("AdminScope: credentials and scopes on the admin listener", .timeLimit(.minutes(5)))
struct AdminScopeTests {
    @Test("the credentials file: good lines parse, every bad line is reported by number, and no hash is quoted")
    func credentialsFile() throws {
        let good = try AdminCredentials.parseFile(ScopedCredentials.fileText).get()
        #expect(good.map(\.name) == ["shop-backend", "oncall-ops", "prometheus"])
        #expect(AdminCredentials(good).authenticate("phk_merchant-token-for-tests")?.name == "shop-backend")
        #expect(AdminCredentials(good).authenticate("phk_merchant-token-for-test") == nil)
        #expect(AdminCredentials(good).authenticate("") == nil)

        let hash = "sha256:" + String(repeating: "ab", count: 32)
        let bad = """
            alice operator \(hash)
            bob admin \(hash.dropLast(2))cd
            carol merchant md5:abcd
            alice merchant sha256:\(String(repeating: "cd", count: 32))
            dave merchant \(hash)
            only-two operator
            spaced\u{00e9} metrics sha256:\(String(repeating: "ef", count: 32))
            """
        guard case .failure(let failure) = AdminCredentials.parseFile(bad) else {
            Issue.record("a file with bad lines parsed")
            return
        }
        let problems = failure.problems
        #expect(problems.map(\.line) == [2, 3, 4, 5, 6, 7])
        #expect(problems[0].message.contains("unknown scope"))
        #expect(problems[2].message.contains("alice is used twice"))
        #expect(problems[3].message.contains("same token hash"))
        #expect(!problems.map(\.description).joined().contains("abab"), "a problem never quotes a hash")
    }

    @Test("configuration: a bad credentials file, a clashing name and a half-set proxy identity are reported together with the rest")
    func configurationProblems() throws {
        var environment = TestSecrets.environment
        environment["PAYHOOK_ADMIN_CREDENTIALS_FILE"] = ScopedCredentials.path
        environment["PAYHOOK_ADMIN_ACTOR"] = "shop-backend"
        environment["PAYHOOK_ADMIN_IDENTITY_HEADER"] = "X-Forwarded-User"
        environment["PAYHOOK_MAX_ATTEMPTS"] = "0"
        do {
            _ = try Configuration.parse(environment: environment, readFile: ScopedCredentials.readFile)
            Issue.record("parsed")
        } catch {
            let variables = error.problems.map(\.variable)
            #expect(variables.contains("PAYHOOK_ADMIN_CREDENTIALS_FILE"), "shop-backend is also PAYHOOK_ADMIN_TOKEN's name: \(error)")
            #expect(variables.contains("PAYHOOK_ADMIN_IDENTITY_HEADER"), "a header without trusted proxies: \(error)")
            #expect(variables.contains("PAYHOOK_MAX_ATTEMPTS"), "every problem at once")
        }
        environment["PAYHOOK_ADMIN_ACTOR"] = nil
        environment["PAYHOOK_ADMIN_IDENTITY_HEADER"] = nil
        environment["PAYHOOK_MAX_ATTEMPTS"] = nil
        do {
            _ = try Configuration.parse(environment: environment) { _ in "alice operator sha256:abcd\n" }
            Issue.record("parsed a file with a short hash")
        } catch {
            #expect(error.problems.map(\.description) == [
                "PAYHOOK_ADMIN_CREDENTIALS_FILE: \(ScopedCredentials.path): line 1: the hash must be sha256: and 64 hex digits (payhook admin-credentials new prints one)",
            ])
        }
        let parsed = try Configuration.parse(environment: environment, readFile: ScopedCredentials.readFile)
        #expect(parsed.adminFileCredentials.map(\.name) == ["shop-backend", "oncall-ops", "prometheus"])
        #expect(parsed.adminActor == "admin-token", "PAYHOOK_ADMIN_TOKEN's credential is named admin-token by default")
    }

    @Test("a route no operation lists needs operator; HEAD needs what GET needs")
    func unlistedRoutesNeedOperator() {
        let operations = [AdminOperation("GET", "/v1/orders/{id}", .merchant)]
        #expect(AdminAuthorization.neededScope(method: "GET", path: "/v1/orders/7", operations: operations) == .merchant)
        #expect(AdminAuthorization.neededScope(method: "HEAD", path: "/v1/orders/7", operations: operations) == .merchant)
        #expect(AdminAuthorization.neededScope(method: "DELETE", path: "/v1/orders/7", operations: operations) == .operator)
        #expect(AdminAuthorization.neededScope(method: "GET", path: "/v1/orders/7/secret", operations: operations) == .operator)
        #expect(AdminAuthorization.neededScope(method: "GET", path: "/v1/new-thing", operations: operations) == .operator)
    }

    @Test("every operation of the OpenAPI document, for every scope: allowed or 403 as documented; the document and the router list the same operations")
    func everyOperationEveryScope() async throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: AdminOpenAPITests.documentURL)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented: [String: Set<String>] = [:]
        for (path, operations) in paths {
            for (method, operation) in operations {
                let scopes = try #require((operation as? [String: Any])?["x-payhook-scopes"] as? [String],
                                          "\(method.uppercased()) \(path) has no x-payhook-scopes")
                documented["\(method.uppercased()) \(path)"] = Set(scopes)
            }
        }
        try await IngressHarness.with("admin_scope_matrix", overrides: ScopedCredentials.overrides,
                                      readFile: ScopedCredentials.readFile) { (ingress) async throws in
            // What the server enforces, from its router and listener: the same operations, the same scopes.
            var enforced: [String: Set<String>] = [:]
            for operation in ingress.server.adminOperations {
                enforced[operation.description] = operation.scope.map { Set([$0.rawValue, "operator"]) } ?? []
            }
            #expect(Set(enforced.keys) == Set(documented.keys),
                    "only in the router: \(Set(enforced.keys).subtracting(documented.keys).sorted()); only in the document: \(Set(documented.keys).subtracting(enforced.keys).sorted())")
            #expect(enforced == documented, "x-payhook-scopes differ from what the server enforces")

            var checked = 0
            for key in documented.keys.sorted() {
                let (method, template) = (String(key.split(separator: " ")[0]), String(key.split(separator: " ")[1]))
                let path = template.replacingOccurrences(of: "{id}", with: "999999")
                let allowed = documented[key]!
                let operation = try #require(paths[template]?[method.lowercased()] as? [String: Any])
                let responses = try #require(operation["responses"] as? [String: Any])
                func send(_ headers: [(String, String)]) async throws -> HTTPTestResponse {
                    // An empty object: each route refuses it (400) or finds no such id (404), so
                    // nothing is changed, but the scope check runs first.
                    let body = method == "POST" ? Array("{}".utf8) : []
                    let contentType = method == "POST" ? [("Content-Type", "application/json")] : []
                    return try #require(await HTTPTestClient.send(port: ingress.adminPort, method: method, path: path,
                                                                  headers: headers + contentType, body: body))
                }
                if allowed.isEmpty {
                    #expect(try await send([]).status != 401, "\(key) is public")
                    continue
                }
                #expect(responses["403"] != nil, "\(key) does not document 403")
                #expect(try await send(ScopedCredentials.bearer("phk_unknown")).status == 401, "\(key): an unknown token")
                #expect(try await send([]).status == 401, "\(key): no token")
                for scope in AdminScope.allCases {
                    let response = try await send(ScopedCredentials.bearer(ScopedCredentials.tokens[scope]!))
                    checked += 1
                    if allowed.contains(scope.rawValue) {
                        #expect(![401, 403].contains(response.status), "\(key) refused \(scope): \(response)")
                        #expect(responses[String(response.status)] != nil, "\(key) answered \(scope) with undocumented \(response.status)")
                    } else {
                        #expect(response.status == 403, "\(key) let \(scope) through: \(response)")
                        guard response.status == 403 else { continue }
                        let error = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
                        #expect(error["code"] as? String == "forbidden")
                        let needed = allowed.subtracting(["operator"]).first ?? "operator"
                        #expect((error["message"] as? String)?.contains("\(needed) scope") == true, "\(key): \(response)")
                    }
                }
            }
            #expect(checked == (documented.values.filter { !$0.isEmpty }.count) * 3)
            let forbidden = ingress.server.metrics.counterValue("payhook_admin_requests_refused_total", [("reason", "forbidden")])
            let unauthenticated = ingress.server.metrics.counterValue("payhook_admin_requests_refused_total", [("reason", "unauthenticated")])
            #expect(forbidden == UInt64(documented.values.filter { !$0.isEmpty }.map { 3 - $0.count }.reduce(0, +)))
            #expect(unauthenticated == UInt64(documented.values.filter { !$0.isEmpty }.count * 2))
        }
    }

    @Test("PAYHOOK_ADMIN_TOKEN stays an operator credential, named by PAYHOOK_ADMIN_ACTOR, beside the file's")
    func environmentTokenIsAnOperator() async throws {
        var overrides = ScopedCredentials.overrides
        overrides["PAYHOOK_ADMIN_ACTOR"] = "legacy-ops"
        try await IngressHarness.with("admin_scope_legacy", overrides: overrides, readFile: ScopedCredentials.readFile) { (ingress) async throws in
            let seeded = try await ingress.database.seedDeadJob()
            let replay = try #require(await HTTPTestClient.send(
                port: ingress.adminPort, path: "/v1/dead-letters/\(seeded.letter)/discard",
                headers: ScopedCredentials.bearer(TestSecrets.adminToken) + [("Content-Type", "application/json")],
                body: Array(#"{"note": "test letter", "actor": "carol"}"#.utf8)))
            #expect(replay.status == 200, "\(replay)")
            let row = try await ingress.database.string(
                "SELECT actor || '/' || coalesce(actor_note, '-') AS v FROM audit_log WHERE target = $1", [.text("dead_letter:\(seeded.letter)")])
            #expect(row == "legacy-ops/carol", "the credential is the actor; the body's actor is a note")
            #expect(try await ingress.get("/metrics", admin: true, headers: ScopedCredentials.bearer(TestSecrets.adminToken)).status == 200)
        }
    }

    @Test("repeated refusals from one address: each counted, one log line per interval saying how many were held back")
    func refusalsLoggedOncePerInterval() async throws {
        let lines = Mutex<[String]>([])
        let logger = Logger(minimumLevel: .warning) { line in lines.withLock { $0.append(line) } }
        try await IngressHarness.with("admin_scope_refusals", overrides: ScopedCredentials.overrides, logger: logger,
                                      readFile: ScopedCredentials.readFile) { (ingress) async throws in
            for _ in 0..<20 {
                #expect(try await ingress.get("/v1/dead-letters", admin: true, headers: ScopedCredentials.bearer("phk_guess")).status == 401)
                #expect(try await ingress.get("/v1/dead-letters", admin: true,
                                              headers: ScopedCredentials.bearer(ScopedCredentials.tokens[.merchant]!)).status == 403)
            }
            let refusals = lines.withLock { $0 }.filter { $0.contains("admin request refused") }
            #expect(refusals.count == 2, "one line per reason and address: \(refusals)")
            #expect(refusals.contains { $0.contains("\"unauthenticated\"") } && refusals.contains { $0.contains("\"forbidden\"") })
            #expect(refusals.contains { $0.contains("shop-backend") }, "a 403 line names the credential")
            #expect(!lines.withLock { $0 }.joined().contains("phk_"), "no token in the log")
            #expect(ingress.server.metrics.counterValue("payhook_admin_requests_refused_total", [("reason", "unauthenticated")]) == 20)
            #expect(ingress.server.metrics.counterValue("payhook_admin_requests_refused_total", [("reason", "forbidden")]) == 20)
        }
    }

    @Test("the console signs in operator credentials only; a metrics or merchant token gets no session")
    func consoleNeedsOperator() async throws {
        try await IngressHarness.with("admin_scope_console", overrides: ScopedCredentials.overrides,
                                      readFile: ScopedCredentials.readFile) { (ingress) async throws in
            for (scope, expected) in [(AdminScope.merchant, 403), (.metrics, 403), (.operator, 303)] {
                let answer = try await ConsoleSignIn.post(port: ingress.adminPort, token: ScopedCredentials.tokens[scope]!, name: "")
                #expect(answer.status == expected, "\(scope): \(answer)")
                #expect((answer.headers["set-cookie"] ?? "").contains("payhook_console=") == (expected == 303))
            }
            #expect(try await ConsoleSignIn.post(port: ingress.adminPort, token: "phk_unknown", name: "").status == 401)
        }
    }

    @Test("a console session ends at its next request once its credential is removed and the file reloaded")
    func consoleSessionFollowsItsCredential() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("payhook-console-credentials-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try ScopedCredentials.fileText.write(toFile: file, atomically: true, encoding: .utf8)
        try await IngressHarness.with("admin_scope_session", overrides: ["PAYHOOK_ADMIN_CREDENTIALS_FILE": file],
                                      readFile: { try String(contentsOfFile: $0, encoding: .utf8) }) { (ingress) async throws in
            let operatorToken = ScopedCredentials.tokens[.operator]!
            let session = try await ConsoleSignIn.session(port: ingress.adminPort, token: operatorToken, name: "")
            func deadLettersPage() async throws -> Int {
                try #require(await HTTPTestClient.send(port: ingress.adminPort, method: "GET", path: "/console/dead-letters",
                                                       headers: [("Cookie", session.cookie)])).status
            }
            #expect(try await deadLettersPage() == 200)
            // Another credential goes: this session stays.
            try ScopedCredentials.fileText.split(separator: "\n").filter { !$0.hasPrefix("prometheus") }.joined(separator: "\n")
                .write(toFile: file, atomically: true, encoding: .utf8)
            #expect(ingress.server.reloadAdminCredentials())
            #expect(try await deadLettersPage() == 200)
            // Its own credential goes: the next request finds no session.
            try "# nobody\n".write(toFile: file, atomically: true, encoding: .utf8)
            #expect(ingress.server.reloadAdminCredentials())
            #expect(try await deadLettersPage() == 303, "a removed credential's session must end")
            #expect(ingress.server.adminCredentials.credentials.all.map(\.name) == ["admin-token"])
        }
    }

    @Test("admin-credentials new prints a token once and a line whose hash is that token's")
    func newCredentialCommand() async throws {
        let result = await PayhookCLI.capture(["admin-credentials", "new", "--name", "shop-eu", "--scope", "merchant", "--json"])
        #expect(result.termination == .exited(0), "\(result.standardError)")
        let printed = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: String])
        let token = try #require(printed["token"])
        #expect(token.hasPrefix("phk_") && token.count == 4 + 64)
        let line = try #require(printed["line"])
        let credential = try #require(try AdminCredentials.parseFile(line).get().first)
        #expect(credential.name == "shop-eu" && credential.scope == .merchant)
        #expect(AdminCredentials([credential]).authenticate(token) != nil)
        #expect(!(printed["line"] ?? "").contains(token))
        let again = await PayhookCLI.capture(["admin-credentials", "new", "--name", "shop-eu", "--scope", "merchant", "--json"])
        #expect(!again.standardOutput.contains(token), "every credential gets a new random token")
        #expect(await PayhookCLI.capture(["admin-credentials", "new", "--name", "shop eu", "--scope", "merchant"]).termination == .exited(2))
        #expect(await PayhookCLI.capture(["admin-credentials", "new", "--name", "x", "--scope", "admin"]).termination == .exited(2))
    }
}

/// Signs in to the console as a browser does (CSRF cookie, then the form).
enum ConsoleSignIn {
    static func post(port: Int, token: String, name: String, headers: [(String, String)] = []) async throws -> HTTPTestResponse {
        let form = try #require(await HTTPTestClient.send(port: port, method: "GET", path: "/console", headers: headers))
        let cookie = try #require(form.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let csrf = try #require(ConsoleHarness.hiddenCSRF(form.text))
        let body = [("csrf", csrf), ("token", token), ("name", name)].map { "\($0.0)=\(ConsolePages.urlEncode($0.1))" }.joined(separator: "&")
        return try #require(await HTTPTestClient.send(
            port: port, method: "POST", path: "/console/sign-in",
            headers: headers + [("Cookie", cookie), ("Content-Type", "application/x-www-form-urlencoded")], body: Array(body.utf8)))
    }

    /// A signed-in session: its cookie and CSRF token.
    static func session(port: Int, token: String, name: String, headers: [(String, String)] = []) async throws -> (cookie: String, csrf: String) {
        let answer = try await post(port: port, token: token, name: name, headers: headers)
        try #require(answer.status == 303, "sign-in answered \(answer)")
        let cookie = try #require(answer.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let overview = try #require(await HTTPTestClient.send(port: port, method: "GET", path: "/console", headers: headers + [("Cookie", cookie)]))
        return (cookie, try #require(ConsoleHarness.hiddenCSRF(overview.text)))
    }
}
