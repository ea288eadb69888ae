import Foundation
import PayhookPostgres
import PayhookFeatureTestSupport
import PayhookTestSupport
import Testing
@testable import PayhookApp

/// Who an audited action names as its actor. The admin listener and the console record the
/// credential's name; the console's name field and a body's `actor` are notes beside it. The CLI
/// keeps the contract's order (`--actor`, `$USER`, the operating-system account) and notes the
/// account beside the name when they differ. Containers and cron jobs often run without `$USER`;
/// refusing there made `dead-letters replay --execute` fail for the on-call engineer.
@Suite("The actor of audited CLI commands", .timeLimit(.minutes(5)))
struct OperatorActorTests {
    /// `accountName()`, or a placeholder no test expects when the user has no passwd entry
    /// (the tests that compare with it then fail, naming it).
    static var account: String { (try? accountName()) ?? "<no passwd entry>" }

    /// The login name of this test process's user, looked up here independently of payhook.
    static func accountName() throws -> String {
        let name = try #require(getpwuid(getuid())?.pointee.pw_name, "this test needs a user with a passwd entry")
        return String(cString: name)
    }

    @Test("replay --execute with $USER unset exits 0 and audits the operating-system account")
    func operatingSystemAccountWhenUserIsUnset() async throws {
        let database = try await TestDatabase.migrated("actor_os")
        let seeded = try await database.seedDeadJob()
        // Exactly this environment: no USER, no LOGNAME.
        let result = await PayhookCLI.capture(["dead-letters", "replay", String(seeded.letter), "--execute", "--note", "job fixed"],
                                                 environment: ["DATABASE_URL": database.url])
        #expect(result.termination == .exited(0), "\(result.standardError)")
        let account = try Self.accountName()
        #expect(try await database.string("SELECT actor AS v FROM audit_log WHERE target = $1",
                                          [.text("dead_letter:\(seeded.letter)")]) == account)
        #expect(try await database.string("SELECT resolved_by AS v FROM dead_letters WHERE id = $1", [.int(seeded.letter)]) == account)
    }

    @Test("a CLI replay with --actor names that actor (the contract) and keeps the operating-system account beside it")
    func cliActorKeepsTheAccount() async throws {
        let database = try await TestDatabase.migrated("actor_cli_note")
        let seeded = try await database.seedDeadJob()
        let result = await PayhookCLI.capture(
            ["dead-letters", "replay", String(seeded.letter), "--execute", "--note", "job fixed", "--actor", "mallory"],
            environment: ["DATABASE_URL": database.url, "USER": "someone-else"])
        #expect(result.termination == .exited(0), "\(result.standardError)")
        let account = try Self.accountName()
        #expect(try await database.string("SELECT actor || '/' || coalesce(actor_note, '-') AS v FROM audit_log WHERE target = $1",
                                          [.text("dead_letter:\(seeded.letter)")]) == "mallory/os:\(account)")
        #expect(try await database.string("SELECT resolved_by AS v FROM dead_letters WHERE id = $1", [.int(seeded.letter)]) == "mallory")
    }

    @Test("--actor wins over $USER, and $USER over the operating-system account, which is the note when it differs")
    func precedence() {
        let withFlag = CommandArguments(values: ["--actor": "alice"])
        #expect(withFlag.actor(["USER": "bob"], operatingSystemAccount: { "root" }) == CommandActor(name: "alice", note: "os:root"))
        let plain = CommandArguments()
        #expect(plain.actor(["USER": "bob"], operatingSystemAccount: { "root" }) == CommandActor(name: "bob", note: "os:root"))
        #expect(plain.actor(["USER": "root"], operatingSystemAccount: { "root" }) == CommandActor(name: "root", note: nil))
        #expect(plain.actor(["USER": ""], operatingSystemAccount: { "root" }) == CommandActor(name: "root", note: nil),
                "an empty $USER counts as unset")
        #expect(plain.actor([:], operatingSystemAccount: { "root" }) == CommandActor(name: "root", note: nil))
    }

    @Test("with no --actor, no $USER and no account name, or an empty --actor, the command is refused")
    func refusedWhenNoNameExists() {
        #expect(CommandArguments().actor([:], operatingSystemAccount: { nil }) == nil)
        #expect(CommandArguments().actor(["USER": ""], operatingSystemAccount: { "" }) == nil)
        #expect(CommandArguments(values: ["--actor": ""]).actor(["USER": "bob"], operatingSystemAccount: { "root" }) == nil,
                "an empty --actor is refused, not replaced by a guess")
    }

    @Test("an account without a passwd entry is noted by its number beside the name given")
    func numericAccount() {
        let actor = CommandArguments(values: ["--actor": "alice"]).actor(["USER": "bob"], operatingSystemAccount: { nil })
        #expect(actor == CommandActor(name: "alice", note: "os:uid:\(getuid())"))
    }

    @Test("a replay from the console is audited with the credential signed in with; the typed name is the note")
    func consoleReplayNamesTheCredential() async throws {
        try await IngressHarness.with("actor_console", overrides: ScopedCredentials.overrides,
                                      readFile: ScopedCredentials.readFile) { (ingress) async throws in
            let seeded = try await ingress.database.seedDeadJob()
            let session = try await ConsoleSignIn.session(port: ingress.adminPort, token: ScopedCredentials.tokens[.operator]!, name: "Dana")
            let replay = try #require(await HTTPTestClient.send(
                port: ingress.adminPort, path: "/console/dead-letters/\(seeded.letter)/replay",
                headers: [("Cookie", session.cookie), ("Content-Type", "application/x-www-form-urlencoded")],
                body: Array("csrf=\(session.csrf)&note=job+fixed".utf8)))
            #expect(replay.status == 303, "\(replay)")
            #expect(try await ingress.database.string(
                "SELECT actor || '/' || coalesce(actor_note, '-') AS v FROM audit_log WHERE target = $1",
                [.text("dead_letter:\(seeded.letter)")]) == "oncall-ops/Dana")
            #expect(try await ingress.database.string("SELECT actor || '/' || coalesce(actor_note, '-') AS v FROM audit_log WHERE action = 'console.sign_in'")
                    == "oncall-ops/Dana")
            let page = try #require(await HTTPTestClient.send(port: ingress.adminPort, method: "GET", path: "/console/dead-letters/\(seeded.letter)",
                                                              headers: [("Cookie", session.cookie)]))
            #expect(page.text.contains("oncall-ops (Dana)"), "the letter's audit trail shows the note beside the actor")
        }
    }

    @Test("behind a trusted proxy its identity header names the person; from anywhere else the header is ignored")
    func proxyIdentity() async throws {
        var overrides = ScopedCredentials.overrides
        overrides["PAYHOOK_ADMIN_IDENTITY_HEADER"] = "X-Forwarded-User"
        overrides["PAYHOOK_ADMIN_TRUSTED_PROXIES"] = "127.0.0.1/32"
        try await IngressHarness.with("actor_proxy", overrides: overrides, readFile: ScopedCredentials.readFile) { (ingress) async throws in
            _ = try await ConsoleSignIn.session(port: ingress.adminPort, token: ScopedCredentials.tokens[.operator]!, name: "",
                                                headers: [("X-Forwarded-User", "dana@example.com")])
            let row = try await ingress.database.string(
                "SELECT actor || '/' || (details->>'credential') AS v FROM audit_log WHERE action = 'console.sign_in'")
            #expect(row == "dana@example.com/oncall-ops")
        }
        overrides["PAYHOOK_ADMIN_TRUSTED_PROXIES"] = "192.0.2.10"
        try await IngressHarness.with("actor_proxy_untrusted", overrides: overrides, readFile: ScopedCredentials.readFile) { (ingress) async throws in
            _ = try await ConsoleSignIn.session(port: ingress.adminPort, token: ScopedCredentials.tokens[.operator]!, name: "",
                                                headers: [("X-Forwarded-User", "mallory@example.com")])
            #expect(try await ingress.database.string("SELECT actor AS v FROM audit_log WHERE action = 'console.sign_in'") == "oncall-ops",
                    "the header from an address that is not a trusted proxy is anyone's to send")
        }
    }
}
