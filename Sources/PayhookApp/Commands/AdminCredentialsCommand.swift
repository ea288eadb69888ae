import Foundation
import PayhookAdmin
import PayhookCore
import PayhookCrypto

/// `payhook admin-credentials new --name N --scope S`: a new admin credential, printed once.
///
/// The token is 32 random bytes from OpenSSL's generator; payhook keeps only its SHA-256, in the
/// line this prints for `PAYHOOK_ADMIN_CREDENTIALS_FILE`. The token appears here and nowhere else:
/// not in the file, not in a log. Nothing is written: the operator adds the line to the file and
/// sends SIGHUP (`systemctl reload payhook`).
struct AdminCredentialsCommand: CommandGroup {
    static let usage = """
        usage: payhook admin-credentials new --name NAME --scope merchant|operator|metrics [--json]

          Prints a new random token, once, and the line to add to PAYHOOK_ADMIN_CREDENTIALS_FILE
          (NAME SCOPE sha256:HEX). Give the token to its holder, add the line, then reload
          (SIGHUP; systemctl reload payhook). Scopes: merchant registers and reads orders and
          subscriptions; metrics reads /metrics; operator does everything. NAME is the audit
          log's actor for what the credential does (1 to 64 of A-Z a-z 0-9 . _ @ -).

        """

    static let missingSubcommand = "admin-credentials needs a subcommand: new"
    /// Marks payhook tokens, so secret scanners and people can tell what leaked.
    static let tokenPrefix = "phk_"

    let environment: [String: String]
    let output: CommandOutput

    func run(_ subcommand: String, _ rest: ArraySlice<String>) async -> Int32 {
        guard subcommand == "new" else { return usageError("unknown admin-credentials subcommand: \(subcommand)") }
        guard let parsed = parse(rest, options: ["--name", "--scope"], flags: ["--json"]) else { return 2 }
        guard parsed.positionals.isEmpty else { return usageError("admin-credentials new takes options only") }
        guard let name = parsed.values["--name"] else { return usageError("admin-credentials new needs --name") }
        guard AdminCredential.isValidName(name) else { return usageError("--name must be 1 to 64 of A-Z a-z 0-9 . _ @ -") }
        guard let scopeText = parsed.values["--scope"] else { return usageError("admin-credentials new needs --scope") }
        guard let scope = AdminScope(rawValue: scopeText) else { return usageError("--scope must be merchant, operator or metrics") }
        let token = Self.tokenPrefix + Hex.encode(SecureRandom.bytes(32))
        let credential = AdminCredential(name: name, scope: scope, token: token)
        printResult(parsed, json: .object([
            .init("name", .string(name)), .init("scope", .string(scope.rawValue)),
            .init("token", .string(token)), .init("line", .string(credential.fileLine)),
        ]), text: """
            token for \(name) (shown only now; payhook keeps just its hash):
              \(token)
            line for PAYHOOK_ADMIN_CREDENTIALS_FILE (then reload: systemctl reload payhook, or kill -HUP):
              \(credential.fileLine)

            """)
        return 0
    }
}
