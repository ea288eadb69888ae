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

    /// OpenSSL's static descriptor for this hash. These descriptors are never freed, so no
    /// owner is needed; the C type stays internal to this module.
    var evpMD: OpaquePointer? {
        switch self {
        case .sha1: EVP_sha1()
        case .sha256: EVP_sha256()
        case .sha512: EVP_sha512()
        }
    }
}
