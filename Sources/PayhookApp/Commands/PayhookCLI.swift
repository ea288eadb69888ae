import Foundation
import PayhookCore
import PayhookPostgres
import PayhookAdmin
import PayhookOperations

/// The `payhook` command line: parses argv and runs one subcommand.
///
/// Exit codes: 0 success, 1 runtime failure (database, configuration), 2 usage error.
public enum PayhookCLI: Subcommand {
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
          charges resolve ID --as succeeded|failed --note TEXT
                                                settle by hand a charge whose outcome is unknown
                                                (see `payhook charges help`)
          retention sweep [--json]              delete now what retention allows (serve also
                                                sweeps every PAYHOOK_RETENTION_INTERVAL_SECONDS)
          send-test PROVIDER EVENT [--to URL] [--account NAME] [--amount 1999 EUR] [--count N] …
                                                post a correctly signed sample delivery, signed
                                                with this configuration's keys (`--list`: the
                                                events; see `payhook send-test help`)
          version [--json]                      print the version
          help                                  print this text

        Configuration comes from the environment (see README): DATABASE_URL, PAYHOOK_LISTEN,
        PAYHOOK_ADMIN_LISTEN, PAYHOOK_ADMIN_TOKEN, provider key rings such as PAYHOOK_ADYEN_HMAC_KEYS.
        Secrets may also be given as NAME_FILE.

        """

    public static func main(arguments: [String], environment: [String: String]) async -> Int32 {
        var rest = arguments.dropFirst()
        guard let command = rest.popFirst() else { return usageError("missing command") }
        switch command {
        case "help", "--help", "-h":
            print(usage, terminator: "")
            return 0
        case "version", "--version":
            guard let flags = parseFlags(rest, allowed: ["--json"]) else { return 2 }
            print(flags.contains("--json") ? "{\"version\":\(JSONString.quote(version))}" : "payhook \(version)")
            return 0
        case "migrate":
            guard let flags = parseFlags(rest, allowed: ["--json"]) else { return 2 }
            return await migrate(environment: environment, json: flags.contains("--json"))
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
            return await serve(environment: environment, migrateFirst: migrateFirst, roles: roles)
        case "dead-letters":
            return await DeadLettersCommand.run(rest, environment: environment)
        case "inbound":
            return await InboundCommand.run(rest, environment: environment)
        case "subscriptions":
            return await SubscriptionsCommand.run(rest, environment: environment)
        case "charges":
            return await ChargesCommand.run(rest, environment: environment)
        case "retention":
            return await RetentionCommand.run(rest, environment: environment)
        case "send-test":
            return await SendTestCommand.run(rest, environment: environment)
        default:
            return usageError("unknown command: \(command)")
        }
    }

    static func parseFlags(_ arguments: ArraySlice<String>, allowed: Set<String>) -> Set<String>? {
        for argument in arguments where !allowed.contains(argument) {
            _ = usageError("unknown option: \(argument)")
            return nil
        }
        return Set(arguments)
    }

    static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("payhook: \(message)\n".utf8))
        return 1
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

    static func migrate(environment: [String: String], json: Bool) async -> Int32 {
        let loaded: (Configuration, String)
        switch loadConfiguration(environment) {
        case .success(let value): loaded = value
        case .failure(let error): return fail(error.description)
        }
        do {
            let migrator = PostgresMigrator(conninfo: loaded.1, migrations: try SchemaMigrations.all())
            var steps: [String] = []
            let applied = try await migrator.migrate { migration, took in
                let name = "\(String(format: "%04d", migration.version))_\(migration.name)"
                let seconds = String(format: "%.3f", Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)
                if json {
                    steps.append("{\"name\":\(JSONString.quote(name)),\"seconds\":\(seconds)}")
                } else {
                    print("applied \(name) in \(seconds) s")
                }
            }
            if json {
                print("{\"applied\":[" + applied.map { JSONString.quote("\(String(format: "%04d", $0.version))_\($0.name)") }.joined(separator: ",")
                      + "],\"steps\":[" + steps.joined(separator: ",") + "]}")
            } else if applied.isEmpty {
                print("schema is up to date")
            }
            return 0
        } catch {
            return fail("migrate failed: \(error)")
        }
    }

    static func serve(environment: [String: String], migrateFirst: Bool, roles: Set<ServeRole> = Set(ServeRole.allCases)) async -> Int32 {
        let (configuration, databaseURL): (Configuration, String)
        switch loadConfiguration(environment) {
        case .success(let value): (configuration, databaseURL) = value
        case .failure(let error): return fail(error.description)
        }
        let retention: RetentionPolicy
        switch RetentionPolicy.parse(environment: environment) {
        case .success(let policy): retention = policy
        case .failure(let error): return fail(error.description)
        }
        let logger = StandardOutputLog.logger(level: configuration.logLevel)
        do {
            if migrateFirst {
                let migrator = PostgresMigrator(conninfo: databaseURL, migrations: try SchemaMigrations.all())
                let applied = try await migrator.migrate()
                logger.info("migrations applied", ["count": .init(applied.count)])
            }
            let server = try PayhookServer(configuration: configuration, databaseURL: databaseURL, logger: logger,
                                           roles: roles, retention: retention)
            let signals = ShutdownSignal()
            try await server.run { await signals.wait() }
            return 0
        } catch {
            logger.error("serve failed", ["error": .string(String(describing: error))])
            return 1
        }
    }

    /// Opens a small pool from the environment's `DATABASE_URL`, runs `body`, closes the pool;
    /// `dead-letters` and `subscriptions` share it.
    static func withDatabase(_ environment: [String: String], _ body: (PostgresPool) async -> Int32) async -> Int32 {
        let databaseURL: String
        switch loadConfiguration(environment) {
        case .success(let loaded): databaseURL = loaded.1
        case .failure(let error): return fail(error.description)
        }
        let pool = PostgresPool(conninfo: databaseURL, maxConnections: 2)
        let status = await body(pool)
        await pool.close()
        return status
    }
}

extension OperationsError {
    /// Prints the failure on standard error, naming the command-line option that fed `field`
    /// (`--start-at: …`), and returns the exit status: 2 for input that is invalid or that a rule
    /// refuses, 1 for anything else (the database, a conflict, a missing row).
    func reportOnCommandLine(optionForField: [String: String]) -> Int32 {
        let option = field.flatMap { optionForField[$0] }
        FileHandle.standardError.write(Data("payhook: \(option.map { "\($0): " } ?? "")\(message)\n".utf8))
        return code == .invalidArgument || code == .unprocessable ? 2 : 1
    }
}
