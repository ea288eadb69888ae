import Foundation
import PayhookAdmin
import PayhookCore
import PayhookPostgres

/// What every `payhook` command shares: its usage text, the environment it reads and the output
/// it writes to, and one way to refuse bad input (exit 2, the message, then the usage of the
/// command at fault).
protocol Subcommand: Sendable {
    static var usage: String { get }
    init(environment: [String: String], output: CommandOutput)
    /// Runs the command with the arguments after its name; returns the exit status.
    func run(_ arguments: ArraySlice<String>) async -> Int32
    /// The variables configuration comes from: the process environment when run by `payhook`.
    var environment: [String: String] { get }
    var output: CommandOutput { get }
}

extension Subcommand {
    /// Prints `message` and this command's usage to stderr; returns exit status 2.
    func usageError(_ message: String) -> Int32 {
        output.printError("payhook: \(message)\n\n\(Self.usage)", terminator: "")
        return 2
    }

    /// Prints this command's usage to stdout, as asked for by `help`; returns exit status 0.
    func printUsage() -> Int32 {
        output.print(Self.usage, terminator: "")
        return 0
    }

    /// Prints `message` to stderr; returns exit status 1, a runtime failure.
    func fail(_ message: String) -> Int32 {
        output.printError("payhook: \(message)")
        return 1
    }

    /// The arguments, or nil after reporting what is wrong with them.
    func parse(_ arguments: ArraySlice<String>, options: Set<String>, flags: Set<String>) -> CommandArguments? {
        switch CommandArguments.parse(arguments, options: options, flags: flags) {
        case .success(let parsed): return parsed
        case .failure(let problem):
            _ = usageError(problem.message)
            return nil
        }
    }

    /// The one positive id among the positional arguments, or nil after reporting `problem`.
    func onlyID(_ parsed: CommandArguments, else problem: String) -> Int64? {
        guard parsed.positionals.count == 1, let id = Int64(parsed.positionals[0]), id > 0 else {
            _ = usageError(problem)
            return nil
        }
        return id
    }

    /// Prints `json` on one line when `--json` was given, else `text`, which ends its own lines.
    func printResult(_ parsed: CommandArguments, json: @autoclosure () -> JSONOutput, text: @autoclosure () -> String) {
        if parsed.flags.contains("--json") {
            output.print(json().rendered)
        } else {
            output.print(text(), terminator: "")
        }
    }

    /// Who is acting (`--actor`, `$USER`, the operating-system account, with the account as a
    /// note when it differs), or nil after saying that nobody is named (exit 2).
    func actor(_ parsed: CommandArguments) -> CommandActor? {
        if let actor = parsed.actor(environment) { return actor }
        _ = usageError(CommandArguments.missingActor)
        return nil
    }

    /// Who acts when `--execute` is given; a dry run changes nothing and is not audited.
    func actorIfExecuting(_ parsed: CommandArguments) -> CommandActor? {
        parsed.flags.contains("--execute") ? actor(parsed) : CommandActor(name: "", note: nil)
    }

    /// The audited action of `actor`, recording that it came from the command line and with
    /// which arguments.
    func operatorAction(actor: CommandActor, note: String? = nil, arguments: [String], context: [JSONOutput.Member] = []) -> OperatorAction {
        OperatorAction(actor: actor.name, actorNote: actor.note, note: note, context: [
            .init("via", .string("cli")), .init("arguments", .array(arguments.map { .string($0) })),
        ] + context)
    }

    /// Opens a small pool from the environment's `DATABASE_URL`, runs `body`, closes the pool.
    /// What `body` throws goes to `report`; by default its message is printed and the exit
    /// status is 1.
    func withDatabase(
        report: ((OperationsError) -> Int32)? = nil, _ body: (PostgresPool) async throws -> Int32
    ) async -> Int32 {
        let databaseURL: String
        let pooling: PostgresPooling
        switch PayhookCLI.loadConfiguration(environment) {
        case .success(let loaded): (databaseURL, pooling) = (loaded.1, loaded.0.databasePooling)
        case .failure(let error): return fail(error.description)
        }
        let pool = PostgresPool(conninfo: databaseURL, maxConnections: 2, pooling: pooling)
        let status: Int32
        do {
            status = try await body(pool)
        } catch {
            let failure = OperationsError.wrapping(error)
            status = report?(failure) ?? fail(failure.message)
        }
        await pool.close()
        return status
    }

    /// Prints a refused operation, naming the command-line option that fed its `field`
    /// (`--start-at: …`), and returns the exit status: 2 for input that is invalid or that a rule
    /// refuses, 1 for anything else (the database, a conflict, a missing row).
    func report(_ failure: OperationsError, optionForField: [String: String]) -> Int32 {
        let option = failure.field.flatMap { optionForField[$0] }
        output.printError("payhook: \(option.map { "\($0): " } ?? "")\(failure.message)")
        return failure.code == .invalidArgument || failure.code == .unprocessable ? 2 : 1
    }
}

/// A command whose first argument says what to do (`dead-letters list`, `retention sweep`).
protocol CommandGroup: Subcommand {
    /// The usage error when no subcommand is given (`dead-letters needs a subcommand`).
    static var missingSubcommand: String { get }
    /// Runs `subcommand` with the arguments after it; `help` is answered before it is called.
    func run(_ subcommand: String, _ arguments: ArraySlice<String>) async -> Int32
}

extension CommandGroup {
    /// Runs the subcommand `arguments` start with, or prints the usage for `help`.
    func run(_ arguments: ArraySlice<String>) async -> Int32 {
        var rest = arguments
        guard let subcommand = rest.popFirst() else { return usageError(Self.missingSubcommand) }
        if subcommand == "help" || subcommand == "--help" || subcommand == "-h" { return printUsage() }
        return await run(subcommand, rest)
    }
}
