/// One problem with one variable; the message never contains the value of a secret.
public struct ConfigurationProblem: Sendable, Equatable, CustomStringConvertible {
    public let variable: String
    public let message: String

    public init(variable: String, message: String) {
        self.variable = variable
        self.message = message
    }
    public var description: String { "\(variable): \(message)" }
}

/// Every problem found in the environment, reported together.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let problems: [ConfigurationProblem]

    public init(problems: [ConfigurationProblem]) { self.problems = problems }
    public var description: String {
        "invalid configuration:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
    }
}
