import COpenSSL

/// A hash function offered by the crypto module.
///
/// The raw value is the name used in configuration (`sha256`), so a provider whose hash is
/// UNCONFIRMED can be switched without a code change.
public enum HashAlgorithm: String, Sendable, CaseIterable {
    case sha1
    case sha256
    case sha512

    /// Output length in bytes.
    public var digestLength: Int {
        switch self {
        case .sha1: 20
        case .sha256: 32
        case .sha512: 64
        }
    }

    /// The digest name OpenSSL's `EVP_MAC` parameters use.
    var openSSLName: String {
        switch self {
        case .sha1: "SHA1"
        case .sha256: "SHA256"
        case .sha512: "SHA512"
        }
    }

    /// The digest implementation, fetched from OpenSSL's providers once per process.
    ///
    /// OpenSSL 3 resolves the static `EVP_sha256()` descriptors to a provider implementation on
    /// every `EVP_Digest` call (a locked lookup); a fetched one skips that. Falls back to the
    /// static descriptor if the fetch failed. Never freed, so no owner is needed; the C type
    /// stays internal to this module.
    var evpMD: OpaquePointer? {
        switch self {
        case .sha1: FetchedDigests.shared.sha1 ?? EVP_sha1()
        case .sha256: FetchedDigests.shared.sha256 ?? EVP_sha256()
        case .sha512: FetchedDigests.shared.sha512 ?? EVP_sha512()
        }
    }
}

/// Digests fetched once (`EVP_MD_fetch`) and kept for the life of the process.
///
/// `@unchecked Sendable` invariant: the pointers are set once in `init` and never freed; a
/// fetched `EVP_MD` is immutable and OpenSSL allows it to be used from any thread at once.
private final class FetchedDigests: @unchecked Sendable {
    static let shared = FetchedDigests()

    let sha1: OpaquePointer?
    let sha256: OpaquePointer?
    let sha512: OpaquePointer?

    private init() {
        sha1 = EVP_MD_fetch(nil, "SHA1", nil)
        sha256 = EVP_MD_fetch(nil, "SHA256", nil)
        sha512 = EVP_MD_fetch(nil, "SHA512", nil)
    }
}
