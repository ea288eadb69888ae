import Foundation
import PayhookFeatureTestSupport
import PayhookTestSupport
@testable import PayhookApp
@testable import PayhookAdmin
@testable import PayhookOperations
@testable import PayhookIngress
@testable import PayhookProcessing
@testable import PayhookSubscriptions
import Testing

/// The `payhook` command line as a user meets it: exit codes, where messages go, what they say.
///
/// Most commands run in-process (`PayhookCLI.capture`); the tests that spawn the built binary
/// prove that the executable hands stdout, stderr and the exit status to its parent, or need
/// separate processes (two migrations racing, `serve`).
@Suite("payhook command line", .timeLimit(.minutes(5)))
struct CLITests {
    @Test("version and help exit 0 and print to stdout")
    func versionAndHelp() async throws {
        let version = try await PayhookBinary.run(["version"])
        #expect(version.termination == .exited(0))
        #expect(version.standardOutput == "payhook \(PayhookCLI.version)\n")
        let json = try await PayhookBinary.run(["version", "--json"])
        #expect(json.termination == .exited(0))
        #expect(json.standardOutput.contains("\"version\":\"\(PayhookCLI.version)\""))
        let help = try await PayhookBinary.run(["help"])
        #expect(help.termination == .exited(0))
        #expect(help.standardOutput.hasPrefix("usage: payhook"))
        #expect(help.standardError.isEmpty)
    }

    @Test("a list prints its table and a count line, or only the line saying that nothing matches")
    func listingText() {
        #expect(TextTable.listing(header: ["ID", "NAME"], rows: [], counting: "widget", none: "no widgets match")
            == "no widgets match\n")
        #expect(TextTable.listing(header: ["ID", "NAME"], rows: [["1", "a"], ["22", "b"]], counting: "widget", none: "no widgets match")
            == "ID  NAME\n1   a\n22  b\n2 widget(s)\n")
    }

    @Test("an unknown command or flag exits 2 with the usage on stderr", arguments: [
        ["frobnicate"], ["version", "--frobnicate"], ["serve", "--frobnicate"], ["migrate", "--dry"], [],
    ])
    func usageErrors(arguments: [String]) async throws {
        let result = await PayhookCLI.capture(arguments)
        #expect(result.termination == .exited(2))
        #expect(result.standardError.contains("usage: payhook"), "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
    }

    @Test("a subcommand's unknown flag is reported with that subcommand's usage")
    func subcommandUsage() async throws {
        let result = await PayhookCLI.capture(["retention", "sweep", "--bogus"])
        #expect(result.termination == .exited(2))
        #expect(result.standardError.hasPrefix("payhook: unknown option: --bogus\n\nusage: payhook retention sweep"), "\(result.standardError)")
    }

    @Test("an operator command against a schema that was never migrated says to run migrate")
    func unmigratedSchema() async throws {
        let database = try await TestDatabase.empty("cli_unmigrated")
        let result = await PayhookCLI.capture(["dead-letters", "list"], environment: ["DATABASE_URL": database.url])
        #expect(result.termination == .exited(1))
        #expect(result.standardError.contains("run `payhook migrate`"), "\(result.standardError)")
    }

    @Test("migrate applies every migration once; run again it says the schema is up to date")
    func migrateTwice() async throws {
        let database = try await TestDatabase.empty("cli_migrate")
        let first = await PayhookCLI.capture(["migrate"], environment: ["DATABASE_URL": database.url])
        #expect(first.termination == .exited(0), "\(first.standardError)")
        let expected = try SchemaMigrations.all().count
        let appliedLines = first.standardOutput.split(separator: "\n").filter { $0.hasPrefix("applied ") }
        #expect(appliedLines.count == expected, "\(first.standardOutput)")
        // Each step says how long it took: `applied 0001_create_ingress_tables in 0.012 s`.
        for line in appliedLines {
            let words = line.split(separator: " ")
            #expect(words.count == 5 && words[2] == "in" && Double(words[3]) != nil && words[4] == "s", "\(line)")
        }
        let second = await PayhookCLI.capture(["migrate"], environment: ["DATABASE_URL": database.url])
        #expect(second.termination == .exited(0))
        #expect(second.standardOutput == "schema is up to date\n")
    }

    @Test("migrate without DATABASE_URL exits 1 naming DATABASE_URL")
    func migrateWithoutDatabase() async throws {
        let result = try await PayhookBinary.run(["migrate"])
        #expect(result.termination == .exited(1))
        #expect(result.standardError.contains("DATABASE_URL"), "\(result.standardError)")
    }

    @Test("two migrate processes at once on a fresh schema both succeed and apply each version once")
    func concurrentMigrate() async throws {
        let database = try await TestDatabase.empty("cli_migrate_race")
        async let a = PayhookBinary.run(["migrate"], environment: ["DATABASE_URL": database.url])
        async let b = PayhookBinary.run(["migrate"], environment: ["DATABASE_URL": database.url])
        let results = try await [a, b]
        for result in results {
            #expect(result.termination == .exited(0), "\(result.standardError)")
        }
        let versions = try await database.query("SELECT version, count(*) AS n FROM schema_migrations GROUP BY version ORDER BY version")
            .map { (try $0.decode("version", as: Int.self), try $0.decode("n", as: Int.self)) }
        let expected = try SchemaMigrations.all().map(\.version)
        #expect(versions.map(\.0) == expected)
        #expect(versions.allSatisfy { $0.1 == 1 })
        // Between them, each migration was reported applied exactly once.
        let applied = results.flatMap { $0.standardOutput.split(separator: "\n").filter { $0.hasPrefix("applied ") } }
        #expect(applied.count == expected.count)
    }

    @Test("serve with an invalid key ring exits 1, naming the variable and never printing the secret")
    func invalidConfiguration() async throws {
        let secret = "zzNotHexButSecret42"
        let result = try await PayhookBinary.run(["serve"], environment: [
            "DATABASE_URL": "postgresql:///nowhere?host=/nonexistent",
            "PAYHOOK_LISTEN": "127.0.0.1:0", "PAYHOOK_ADMIN_LISTEN": "127.0.0.1:0",
            "PAYHOOK_ADYEN_HMAC_KEYS": secret,
        ])
        #expect(result.termination == .exited(1))
        #expect(result.standardError.contains("PAYHOOK_ADYEN_HMAC_KEYS"), "\(result.standardError)")
        #expect(!result.standardError.contains(secret))
        #expect(!result.standardOutput.contains(secret))
    }
}
