import Foundation

/// Positional arguments, `--name value` options and `--flag`s of one subcommand.
struct CommandArguments: Sendable {
    /// Who runs an action that is audited: the operating-system account running the command,
    /// which the CLI cannot be lied to about (it reaches the database directly, so it already holds
    /// more than any admin token). `--actor NAME` is kept as a note beside it, as is `$USER` when it
    /// names someone else (`sudo -u payhook` keeps the engineer's `$USER`); neither replaces it.
    func actor(
        _ environment: [String: String], operatingSystemAccount: () -> String? = OperatingSystemAccount.currentName
    ) -> CommandActor {
        let account = operatingSystemAccount().flatMap { $0.isEmpty ? nil : $0 } ?? OperatingSystemAccount.numericName()
        if let flag = values["--actor"], !flag.isEmpty { return CommandActor(name: account, note: flag) }
        if let user = environment["USER"], !user.isEmpty, user != account { return CommandActor(name: account, note: user) }
        return CommandActor(name: account, note: nil)
    }

    var positionals: [String] = []
    var values: [String: String] = [:]
    var flags: Set<String> = []

    struct Problem: Error {
        let message: String
    }

    /// Parses `arguments`; an option given twice, a missing value or an unknown `--x` is a problem.
    static func parse(_ arguments: ArraySlice<String>, options: Set<String>, flags: Set<String>) -> Result<CommandArguments, Problem> {
        var parsed = CommandArguments()
        var rest = arguments
        while let argument = rest.popFirst() {
            if options.contains(argument) {
                guard let value = rest.popFirst() else { return .failure(Problem(message: "\(argument) needs a value")) }
                guard parsed.values[argument] == nil else { return .failure(Problem(message: "\(argument) given twice")) }
                parsed.values[argument] = value
            } else if flags.contains(argument) {
                parsed.flags.insert(argument)
            } else if argument.hasPrefix("-") {
                return .failure(Problem(message: "unknown option: \(argument)"))
            } else {
                parsed.positionals.append(argument)
            }
        }
        return .success(parsed)
    }
}

/// The actor of an audited CLI command: the operating-system account, and an unchecked name
/// given beside it (`--actor`, or a `$USER` that differs from the account).
struct CommandActor: Sendable, Equatable {
    let name: String
    let note: String?
}
