/// A feature's named SQL statements: every stored property of the conforming struct is one
/// statement, and `statements` lists them all by reflection.
///
/// Why reflection: one test prepares every statement against the migrated schema, and a list
/// kept by hand beside the statements falls behind them. Here a statement added as a property
/// is listed, named and prepared without anyone editing a list. Callers read statements
/// through the instance (`ProcessingSQL.shared.claimDue`), so the one way to write a statement
/// that the registry misses, a `static let`, also reads differently at every call site.
/// Statics are for what is not a statement on its own: column lists and shared clauses spliced
/// into statements, and the few statements PREPARE cannot take (COPY).
///
/// ```swift
/// package struct OrderSQL: SQLStatementSet {
///     package static let shared = OrderSQL()
///     static let columns = "id, provider"                       // a fragment: not listed
///     let selectByID = "SELECT \(columns) FROM orders WHERE id = $1"  // listed as OrderSQL.selectByID
/// }
/// ```
///
/// A new set is listed in `SQLStatementCatalog` (PayhookApp), the one list of sets.
package protocol SQLStatementSet: Sendable {
    /// The instance callers read statements from, built once.
    static var shared: Self { get }
}

extension SQLStatementSet {
    /// Every statement of the set, named `Type.property`, in declaration order.
    package static var statements: [(name: String, sql: String)] {
        Mirror(reflecting: shared).children.compactMap { child in
            guard let label = child.label, let sql = child.value as? String else { return nil }
            return ("\(Self.self).\(label)", sql)
        }
    }

    /// How many stored properties the set has; each should be a statement (`statements.count`).
    package static var storedPropertyCount: Int { Mirror(reflecting: shared).children.count }
}
