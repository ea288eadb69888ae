package import PayhookCore
import PayhookCrypto
package import PayhookHTTP

/// Bearer-token check for the admin listener, compared in constant time.
package enum AdminAuthorization {
    package static func isAuthorized(_ request: HTTPRequest, token: Secret?) -> Bool {
        guard let token, let header = request.header("authorization") else { return false }
        let prefix = "Bearer "
        guard header.count > prefix.count, header.lowercased().hasPrefix(prefix.lowercased()) else { return false }
        let presented = Array(header.dropFirst(prefix.count).utf8)
        return ConstantTime.equals(presented, Array(token.value.utf8))
    }
}
