import Foundation

/// Positional arguments, `--name value` options and `--flag`s of one subcommand.
struct CommandArguments: Sendable {
    /// Who runs an action that is audited, as DESIGN.md's contract fixes it: `--actor NAME`, else
    /// `$USER`, else the operating system's account name; `nil` when none names anyone (an empty
    /// `$USER` counts as unset) or `--actor` is given empty (asked for, then left blank: not guessed).
    /// The name is what the caller says; the account running the command is what the kernel says,
    /// so when they differ the account goes beside the name as its note (`os:root`), and the audit
    /// keeps both (an account without a passwd entry is `os:uid:N`).
    func actor(
        _ environment: [String: String], operatingSystemAccount: () -> String? = OperatingSystemAccount.currentName
    ) -> CommandActor? {
        let account = operatingSystemAccount().flatMap { $0.isEmpty ? nil : $0 }
        let name: String
        if let flag = values["--actor"] {
            guard !flag.isEmpty else { return nil }
            name = flag
        } else if let user = environment["USER"], !user.isEmpty {
            name = user
        } else if let account {
            name = account
        } else {
            return nil
        }
        let verified = account ?? OperatingSystemAccount.numericName()
        return CommandActor(name: name, note: verified == name ? nil : "os:\(verified)")
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

/// The actor of an audited CLI command: the name it runs under (`--actor`, `$USER`, the account)
/// and, when that is not the operating-system account, the account as a note (`os:NAME`).
struct CommandActor: Sendable, Equatable {
    let name: String
    let note: String?
}
