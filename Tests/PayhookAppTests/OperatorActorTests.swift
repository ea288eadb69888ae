import Foundation
import PayhookPostgres
import PayhookTestSupport
import Testing
@testable import PayhookApp

/// Who an audited CLI command names as its actor: `--actor`, else `$USER`, else the operating
/// system's account. Containers and cron jobs often run without `$USER`; refusing there made
/// `dead-letters replay --execute` fail for the on-call engineer.
@Suite("The actor of audited CLI commands", .timeLimit(.minutes(2)))
struct OperatorActorTests {
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

    @Test("--actor wins over $USER, and $USER over the operating-system account")
    func precedence() {
        let withFlag = CommandArguments(values: ["--actor": "alice"])
        #expect(withFlag.actor(["USER": "bob"], operatingSystemAccount: { "root" }) == "alice")
        let plain = CommandArguments()
        #expect(plain.actor(["USER": "bob"], operatingSystemAccount: { "root" }) == "bob")
        #expect(plain.actor(["USER": ""], operatingSystemAccount: { "root" }) == "root", "an empty $USER counts as unset")
        #expect(plain.actor([:], operatingSystemAccount: { "root" }) == "root")
    }

    @Test("with no --actor, no $USER and no account name, or an empty --actor, the command is refused")
    func refusedWhenNoNameExists() {
        #expect(CommandArguments().actor([:], operatingSystemAccount: { nil }) == nil)
        #expect(CommandArguments().actor(["USER": ""], operatingSystemAccount: { "" }) == nil)
        #expect(CommandArguments(values: ["--actor": ""]).actor(["USER": "bob"], operatingSystemAccount: { "root" }) == nil,
                "an empty --actor is refused, not replaced by a guess")
    }
}
