import Foundation

/// Positional arguments, `--name value` options and `--flag`s of one subcommand.
struct CommandArguments: Sendable {
    /// Who runs an action that is audited: `--actor NAME`, else `$USER`, else the operating
    /// system's account name; `nil` when none names anyone (an empty `$USER` counts as unset)
    /// or `--actor` is given empty (asked for, then left blank: not guessed).
    func actor(
        _ environment: [String: String], operatingSystemAccount: () -> String? = OperatingSystemAccount.currentName
    ) -> String? {
        if let flag = values["--actor"] { return flag.isEmpty ? nil : flag }
        if let user = environment["USER"], !user.isEmpty { return user }
        guard let account = operatingSystemAccount(), !account.isEmpty else { return nil }
        return account
    }

    static let missingActor = "who is acting? pass --actor NAME (neither $USER nor an operating-system account name is set); it goes into audit_log"

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
