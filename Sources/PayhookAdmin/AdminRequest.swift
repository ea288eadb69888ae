import Foundation

/// Reading the parts of admin API requests every route shares: query pairs, the `limit`
/// parameter and the numeric id in a path. Errors name the parameter, as the routes' do.
package enum AdminRequest {
    /// `a=1&b=x%20y` as name/value pairs, percent- and `+`-decoded.
    package static func queryPairs(_ query: String) -> [(String, String)] {
        query.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            guard let name = parts.first, !name.isEmpty else { return nil }
            return (decode(name), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    /// `limit=N` of the list routes: 1 to 10,000.
    package static func limit(_ value: String) throws(OperationsError) -> Int {
        guard let limit = Int(value), (1...10_000).contains(limit) else {
            throw .invalid("limit", "limit must be a number from 1 to 10000")
        }
        return limit
    }

    /// The `{id}` segment of a path, a positive integer; `what` names it in the error.
    package static func pathID(_ text: String, of what: String) throws(OperationsError) -> Int64 {
        guard let id = Int64(text), id > 0 else { throw .invalid("id", "the \(what) id must be a positive integer") }
        return id
    }
}
