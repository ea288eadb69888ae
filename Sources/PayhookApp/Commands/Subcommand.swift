import Foundation

/// What every `payhook` command shares: its usage text, and one way to refuse bad input (exit 2,
/// the message, then the usage of the command at fault).
protocol Subcommand {
    static var usage: String { get }
}

extension Subcommand {
    /// Prints `message` and this command's usage to stderr; returns exit status 2.
    static func usageError(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("payhook: \(message)\n\n\(usage)".utf8))
        return 2
    }

    /// The arguments, or nil after reporting what is wrong with them.
    static func parse(_ arguments: ArraySlice<String>, options: Set<String>, flags: Set<String>) -> CommandArguments? {
        switch CommandArguments.parse(arguments, options: options, flags: flags) {
        case .success(let parsed): return parsed
        case .failure(let problem):
            _ = usageError(problem.message)
            return nil
        }
    }

    /// Who is acting (`--actor`, `$USER`, the operating-system account), or nil after saying
    /// none could be found.
    static func actor(_ parsed: CommandArguments, _ environment: [String: String]) -> String? {
        if let actor = parsed.actor(environment) { return actor }
        _ = usageError(CommandArguments.missingActor)
        return nil
    }
}
