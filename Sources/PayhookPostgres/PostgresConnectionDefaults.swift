import CLibPQ

#if canImport(Glibc)
import Glibc
#endif

/// The libpq parameters payhook connects with where `DATABASE_URL` says nothing.
///
/// Why: libpq's own defaults wait for a failed host as long as the operating system does (no
/// connect timeout; TCP retransmission for about 15 minutes on a partition), so a failover that
/// takes seconds would stop payhook for minutes. These make a dead or partitioned server show
/// within seconds. A URL or `key=value` string that sets any of them wins.
public enum PostgresConnectionDefaults {
    /// Keyword and value, in the order libpq receives them.
    public static let parameters: [(keyword: String, value: String)] = [
        // Per host of a multi-host URL: a hung host costs this much before libpq tries the next.
        // libpq treats values below 2 as 2.
        ("connect_timeout", "2"),
        ("client_encoding", "UTF8"),
        // An idle session on a host that vanished is noticed after about 5 + 2 × 3 seconds.
        ("keepalives", "1"),
        ("keepalives_idle", "5"),
        ("keepalives_interval", "2"),
        ("keepalives_count", "3"),
        // Data sent and not acknowledged for this long (milliseconds) ends the connection.
        ("tcp_user_timeout", "10000"),
    ]

    /// Every parameter `conninfo` sets, then each default it is silent on.
    ///
    /// `conninfo` is a URI (`postgresql://…`) or a `key=value` string; libpq parses it
    /// (`PQconninfoParse`), so both forms and their quoting rules are libpq's own. Parameters it
    /// leaves unset still fall back to libpq's environment variables (`PGHOST`, …) at connect.
    /// - Throws: `.connectionFailed` with libpq's message when the string does not parse.
    public static func resolve(_ conninfo: String) throws(PostgresError) -> [(keyword: String, value: String)] {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            let message = errorMessage.map { Libpq.firstLine($0) } ?? "invalid connection string"
            if let errorMessage { PQfreemem(errorMessage) }
            throw PostgresError(kind: .connectionFailed, message: message)
        }
        defer { PQconninfoFree(options) }
        var given: [(keyword: String, value: String)] = []
        var index = 0
        while let keyword = options[index].keyword {
            if let value = options[index].val {
                given.append((String(cString: keyword), String(cString: value)))
            }
            index += 1
        }
        let named = Set(given.map(\.keyword))
        return given + parameters.filter { !named.contains($0.keyword) }
    }
}
