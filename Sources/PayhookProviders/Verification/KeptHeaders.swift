/// The signature headers a verifier keeps with an accepted delivery: a few pairs, names
/// lowercased, in the order the verifier names them.
///
/// A plain array rather than a dictionary: for two or three entries, a dictionary's allocation
/// and seeded hashing cost more per delivery than the signature check itself (bench/ingest
/// profile). Look a value up by name with the subscript.
public struct KeptHeaders: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public struct Header: Sendable, Equatable {
        public let name: String
        public let value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public private(set) var headers: [Header]

    public init(_ headers: [Header] = []) {
        self.headers = headers
    }

    /// The first value of each of `names` found in `headers`; names compare exactly, so both
    /// are lowercase (as request headers and every caller's names are).
    public init(_ headers: [(name: String, value: String)], keeping names: some Sequence<String>) {
        self.headers = []
        // Sized once: growing from empty reallocated twice for a verifier's two or three names.
        self.headers.reserveCapacity(names.underestimatedCount)
        for name in names {
            if let value = headers.first(where: { $0.name == name })?.value {
                self.headers.append(Header(name: name, value: value))
            }
        }
    }

    /// Pairs from a literal; a repeated name keeps its first value.
    public init(dictionaryLiteral elements: (String, String)...) {
        headers = []
        for (name, value) in elements where self[name] == nil {
            headers.append(Header(name: name, value: value))
        }
    }

    /// The value kept under `name` (lowercased), if any.
    public subscript(name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    public var isEmpty: Bool { headers.isEmpty }

    /// Equal when each side finds the other's every pair (order ignored, as for a dictionary).
    public static func == (left: KeptHeaders, right: KeptHeaders) -> Bool {
        left.headers.allSatisfy { right[$0.name] == $0.value } && right.headers.allSatisfy { left[$0.name] == $0.value }
    }
}
