import Foundation
import PayhookCrypto

/// What a credential of the admin listener may do.
///
/// `operator` may do everything; the other two are cut to what their usual holder needs, so a
/// leaked credential of the merchant's backend or of Prometheus cannot replay, discard or settle.
package enum AdminScope: String, Sendable, CaseIterable, Comparable {
    /// Register and read orders; create, read, pause, resume and cancel subscriptions.
    case merchant
    /// Everything: the console, dead letters, vault tokens, `charges resolve`, metrics.
    case `operator`
    /// `GET /metrics` only.
    case metrics

    package static func < (lhs: AdminScope, rhs: AdminScope) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Whether a credential of this scope may use an operation that needs `needed`.
    package func permits(_ needed: AdminScope) -> Bool {
        self == .operator || self == needed
    }
}

/// One named credential: who holds a token and what it may do. The token itself is never kept,
/// only its SHA-256 digest.
package struct AdminCredential: Sendable, Equatable {
    /// The audit log's actor for everything done with this credential.
    package let name: String
    package let scope: AdminScope
    /// SHA-256 of the token's UTF-8 bytes.
    package let tokenDigest: [UInt8]

    package init(name: String, scope: AdminScope, tokenDigest: [UInt8]) {
        self.name = name
        self.scope = scope
        self.tokenDigest = tokenDigest
    }

    /// The credential for `token`, hashed here.
    package init(name: String, scope: AdminScope, token: String) {
        self.init(name: name, scope: scope, tokenDigest: Self.digest(of: token))
    }

    /// Why SHA-256 and not a password hash: tokens are 32 random bytes, so there is nothing for
    /// a slow hash to protect against, and every request pays for the check.
    package static func digest(of token: String) -> [UInt8] {
        Digest.hash(.sha256, Array(token.utf8))
    }

    /// This credential as a line of the credentials file: `name scope sha256:HEX`.
    package var fileLine: String { "\(name) \(scope.rawValue) sha256:\(Hex.encode(tokenDigest))" }

    /// Names are what the audit log shows; they must read well and never contain spaces.
    package static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64
            && name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._@-".unicodeScalars.contains($0)) }
    }
}

/// The credentials the admin listener accepts now: `PAYHOOK_ADMIN_TOKEN` (an operator credential)
/// and the lines of `PAYHOOK_ADMIN_CREDENTIALS_FILE`.
package struct AdminCredentials: Sendable, Equatable {
    package let all: [AdminCredential]

    package init(_ credentials: [AdminCredential]) {
        self.all = credentials
    }

    package static let none = AdminCredentials([])

    /// `PAYHOOK_ADMIN_TOKEN`'s credential (when set) beside the file's, or why they cannot stand
    /// together: one name for two credentials would make the audit's actor ambiguous. At start
    /// the reason is a configuration problem; on reload it keeps the old set.
    package static func combining(environment: AdminCredential?, file: [AdminCredential]) -> Result<AdminCredentials, NameTaken> {
        if let environment, file.contains(where: { $0.name == environment.name }) { return .failure(NameTaken(name: environment.name)) }
        return .success(AdminCredentials((environment.map { [$0] } ?? []) + file))
    }

    /// A file credential named like `PAYHOOK_ADMIN_TOKEN`'s.
    package struct NameTaken: Error, Sendable, Equatable, CustomStringConvertible {
        package let name: String
        package var description: String { "the name \(name) is already PAYHOOK_ADMIN_TOKEN's (PAYHOOK_ADMIN_ACTOR); use another" }
    }

    /// How many credentials of `scope` are accepted.
    package func count(of scope: AdminScope) -> Int {
        all.filter { $0.scope == scope }.count
    }

    /// The credential whose token is `presented`, or nil.
    ///
    /// Every credential is compared, in constant time, whatever matched: how long this takes
    /// says how many credentials there are, never which one or how much of a token was right.
    package func authenticate(_ presented: String) -> AdminCredential? {
        let digest = AdminCredential.digest(of: presented)
        var found: AdminCredential?
        for credential in all where ConstantTime.equals(digest, credential.tokenDigest) && found == nil {
            found = credential
        }
        return found
    }

    /// Whether a credential with exactly this name and digest is still accepted; a console
    /// session ends when its credential was removed from the file.
    package func contains(_ credential: AdminCredential) -> Bool {
        all.contains(credential)
    }

    /// One problem in a credentials file, by line number; it never quotes the line (which holds a digest).
    package struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        package let line: Int
        package let message: String
        package var description: String { "line \(line): \(message)" }
    }

    /// Every problem of one credentials file.
    package struct FileProblems: Error, Sendable, Equatable {
        package let problems: [Problem]
    }

    /// Parses a credentials file: one `NAME SCOPE sha256:HEX` per line; blank lines and lines
    /// starting with `#` are ignored. Every problem is reported, not just the first.
    package static func parseFile(_ text: String) -> Result<[AdminCredential], FileProblems> {
        var credentials: [AdminCredential] = []
        var problems: [Problem] = []
        var names = Set<String>()
        var digests = Set<[UInt8]>()
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            let number = index + 1
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard fields.count == 3 else {
                problems.append(Problem(line: number, message: "expected three fields: NAME SCOPE sha256:HEX"))
                continue
            }
            let (name, scopeText, hashText) = (fields[0], fields[1], fields[2])
            guard AdminCredential.isValidName(name) else {
                problems.append(Problem(line: number, message: "the name must be 1 to 64 of A-Z a-z 0-9 . _ @ -"))
                continue
            }
            guard let scope = AdminScope(rawValue: scopeText) else {
                problems.append(Problem(line: number, message: "unknown scope; known: merchant, operator, metrics"))
                continue
            }
            guard hashText.hasPrefix("sha256:"), let digest = try? Hex.decode(String(hashText.dropFirst(7))), digest.count == 32 else {
                problems.append(Problem(line: number, message: "the hash must be sha256: and 64 hex digits (payhook admin-credentials new prints one)"))
                continue
            }
            guard names.insert(name).inserted else {
                problems.append(Problem(line: number, message: "the name \(name) is used twice"))
                continue
            }
            guard digests.insert(digest).inserted else {
                problems.append(Problem(line: number, message: "the same token hash is given twice"))
                continue
            }
            credentials.append(AdminCredential(name: name, scope: scope, tokenDigest: digest))
        }
        return problems.isEmpty ? .success(credentials) : .failure(FileProblems(problems: problems))
    }
}
