/// One forward-only schema change, read from a file named `NNNN_verb_noun.sql`.
public struct Migration: Sendable, Hashable {
    /// The number before the first underscore; migrations apply in ascending order.
    public let version: Int
    /// The rest of the file name without `.sql`, e.g. `create_jobs`.
    public let name: String
    /// The SQL, run with the simple protocol inside one transaction.
    public let sql: String
    /// The original file name, used in error messages.
    public let fileName: String

    /// Parses `fileName` (`0001_create_jobs.sql` → version 1, name `create_jobs`).
    ///
    /// - Throws: `.migration` naming the file when the name is not digits, `_`, a name of
    ///   letters, digits and underscores, then `.sql`, or when the version is 0.
    public init(fileName: String, sql: String) throws(PostgresError) {
        func invalid(_ reason: String) -> PostgresError {
            PostgresError(kind: .migration, message: "\(fileName) is not a valid migration file name: \(reason)")
        }
        guard fileName.hasSuffix(".sql") else { throw invalid("expected NNNN_name.sql") }
        let stem = fileName.dropLast(4)
        guard let underscore = stem.firstIndex(of: "_") else { throw invalid("expected NNNN_name.sql") }
        let digits = stem[..<underscore]
        let name = stem[stem.index(after: underscore)...]
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let version = Int(digits) else {
            throw invalid("the version must be digits")
        }
        guard version > 0 else { throw invalid("the version must be positive") }
        guard !name.isEmpty,
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
        else { throw invalid("the name must be letters, digits and underscores") }
        self.version = version
        self.name = String(name)
        self.sql = sql
        self.fileName = fileName
    }
}
