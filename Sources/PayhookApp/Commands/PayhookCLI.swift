import Foundation
import PayhookCore
import PayhookPostgres
import PayhookAdmin
import PayhookOperations

/// The `payhook` command line: parses argv and runs one subcommand.
///
/// Exit codes: 0 success, 1 runtime failure (database, configuration), 2 usage error.
public struct PayhookCLI: CommandGroup {
    public static let version = "0.1.0"

    public static let usage = """
        usage: payhook <command> [options]

        commands:
          serve [--migrate] [--roles ingress,processor,worker,scheduler]
                                                run the webhook ingress, the event processor
                                                and the admin listener (default: every role)
          migrate [--json]                      apply pending schema migrations and exit
          dead-letters list|show|replay|discard inspect and replay work that exhausted its retries
                                                (replay is a dry run unless --execute; see
                                                `payhook dead-letters help`)
          inbound reprocess --provider P --since T [--execute]
                                                re-run normalization over processed deliveries
                                                (dry run unless --execute)
          subscriptions create|list|show|cancel|pause|resume
                                                recurring charges on stored vault tokens (see
                                                `payhook subscriptions help`)
          vault-tokens register --provider P --customer ID (--card-id ID | --payment-profile-id ID)
                                                store a token a merchant saved with the provider,
                                                after the provider confirms it (see
                                                `payhook vault-tokens help`)
          charges resolve ID --as succeeded|failed --note TEXT
                                                settle by hand a charge whose outcome is unknown
                                                (see `payhook charges help`)
          retention sweep [--json]              delete now what retention allows (serve also
                                                sweeps every PAYHOOK_RETENTION_INTERVAL_SECONDS)
          send-test PROVIDER EVENT [--to URL] [--account NAME] [--amount 1999 EUR] [--count N] …
                                                post a correctly signed sample delivery, signed
                                                with this configuration's keys (`--list`: the
                                                events; see `payhook send-test help`)
          admin-credentials new --name N --scope merchant|operator|metrics
                                                print a new admin credential: its token, once,
                                                and its line for PAYHOOK_ADMIN_CREDENTIALS_FILE
          version [--json]                      print the version
          help                                  print this text

        Configuration comes from the environment (see README): DATABASE_URL, PAYHOOK_LISTEN,
        PAYHOOK_ADMIN_LISTEN, PAYHOOK_ADMIN_TOKEN, PAYHOOK_ADMIN_CREDENTIALS_FILE, provider key rings
        such as PAYHOOK_ADYEN_HMAC_KEYS.
        Secrets may also be given as NAME_FILE.

        """

    static let missingSubcommand = "missing command"

    /// The commands with a type, and a usage, of their own.
    static let commands: [String: any Subcommand.Type] = [
        "dead-letters": DeadLettersCommand.self, "inbound": InboundCommand.self, "subscriptions": SubscriptionsCommand.self,
        "charges": ChargesCommand.self, "retention": RetentionCommand.self, "send-test": SendTestCommand.self,
        "vault-tokens": VaultTokensCommand.self, "admin-credentials": AdminCredentialsCommand.self,
    ]

    let environment: [String: String]
    let output: CommandOutput

    /// Runs one command line (`arguments` without the program name) and returns its exit status;
    /// everything it prints goes to `output`.
    public static func run(_ arguments: [String], environment: [String: String], output: CommandOutput) async -> Int32 {
        await PayhookCLI(environment: environment, output: output).run(arguments[...])
    }

    func run(_ command: String, _ arguments: ArraySlice<String>) async -> Int32 {
        var rest = arguments
        switch command {
        case "version", "--version":
            guard let flags = parseFlags(rest, allowed: ["--json"]) else { return 2 }
            output.print(flags.contains("--json") ? JSONOutput.object([.init("version", .string(Self.version))]).rendered
                                                  : "payhook \(Self.version)")
            return 0
        case "migrate":
            guard let flags = parseFlags(rest, allowed: ["--json"]) else { return 2 }
            return await migrate(json: flags.contains("--json"))
        case "serve":
            var migrateFirst = false
            var roles = Set(ServeRole.allCases)
            while let argument = rest.popFirst() {
                switch argument {
                case "--migrate": migrateFirst = true
                case "--roles":
                    guard let list = rest.popFirst() else { return usageError("--roles needs a value, e.g. --roles ingress") }
                    switch ServeRole.parse(list) {
                    case .success(let named): roles = named
                    case .failure(let unknown):
                        return usageError("unknown role(s): \(unknown.names.joined(separator: ", ")); known: \(ServeRole.knownNames)")
                    }
                default: return usageError("unknown option for serve: \(argument)")
                }
            }
            return await serve(migrateFirst: migrateFirst, roles: roles)
        default:
            guard let named = Self.commands[command] else { return usageError("unknown command: \(command)") }
            return await named.init(environment: environment, output: output).run(rest)
        }
    }

    /// The flags, or nil after reporting an unknown one with `payhook`'s usage.
    func parseFlags(_ arguments: ArraySlice<String>, allowed: Set<String>) -> Set<String>? {
        for argument in arguments where !allowed.contains(argument) {
            _ = usageError("unknown option: \(argument)")
            return nil
        }
        return Set(arguments)
    }

    static func loadConfiguration(_ environment: [String: String]) -> Result<(Configuration, String), ConfigurationError> {
        do {
            let configuration = try Configuration.parse(environment: environment) { path in
                try String(contentsOfFile: path, encoding: .utf8)
            }
            guard let url = configuration.databaseURL else {
                return .failure(ConfigurationError(problems: [ConfigurationProblem(variable: "DATABASE_URL", message: "required")]))
            }
            return .success((configuration, url.value))
        } catch {
            return .failure(error)
        }
    }

    func migrate(json: Bool) async -> Int32 {
        let loaded: (Configuration, String)
        switch Self.loadConfiguration(environment) {
        case .success(let value): loaded = value
        case .failure(let error): return fail(error.description)
        }
        do {
            let migrator = PostgresMigrator(conninfo: loaded.1, migrations: try SchemaMigrations.all(),
                                            pooling: loaded.0.databasePooling)
            var steps: [JSONOutput] = []
            let applied = try await migrator.migrate { migration, took in
                let name = "\(String(format: "%04d", migration.version))_\(migration.name)"
                let seconds = String(format: "%.3f", Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)
                if json {
                    steps.append(.object([.init("name", .string(name)), .init("seconds", .number(seconds))]))
                } else {
                    output.print("applied \(name) in \(seconds) s")
                }
            }
            if json {
                let names = applied.map { JSONOutput.string("\(String(format: "%04d", $0.version))_\($0.name)") }
                output.print(JSONOutput.object([.init("applied", .array(names)), .init("steps", .array(steps))]).rendered)
            } else if applied.isEmpty {
                output.print("schema is up to date")
            }
            return 0
        } catch {
            return fail("migrate failed: \(error)")
        }
    }

    func serve(migrateFirst: Bool, roles: Set<ServeRole>) async -> Int32 {
        let (configuration, databaseURL): (Configuration, String)
        switch Self.loadConfiguration(environment) {
        case .success(let value): (configuration, databaseURL) = value
        case .failure(let error): return fail(error.description)
        }
        // A running server logs JSON lines to the process's standard output, not to `output`:
        // they are a log stream for the collector, not a command's answer.
        let logger = StandardOutputLog.logger(level: configuration.logLevel)
        do {
            if migrateFirst {
                let migrator = PostgresMigrator(conninfo: databaseURL, migrations: try SchemaMigrations.all(),
                                                pooling: configuration.databasePooling)
                let applied = try await migrator.migrate()
                logger.info("migrations applied", ["count": .init(applied.count)])
            }
            let server = try PayhookServer(configuration: configuration, databaseURL: databaseURL, logger: logger,
                                           roles: roles)
            let signals = ShutdownSignal()
            let hangup = HangupSignal { _ = server.reloadAdminCredentials() }
            try await server.run { await signals.wait() }
            hangup.cancel()
            return 0
        } catch {
            logger.error("serve failed", ["error": .string(String(describing: error))])
            return 1
        }
    }
}
