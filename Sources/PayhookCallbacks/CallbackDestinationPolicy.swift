import Dispatch
package import Foundation
public import PayhookHTTP
#if canImport(Glibc)
import Glibc
#endif

/// Which addresses an order's own `callback_url` may reach.
///
/// Why: the admin API lets its caller name any URL, and the status the endpoint answers can be
/// read back through the order API, so without a rule payhook would probe the services beside
/// it for whoever can register an order (server-side request forgery). By default a per-order
/// URL may not reach loopback, link-local (the cloud metadata services at 169.254.169.254 and
/// fd00:ec2::254 among them), private, shared (CGNAT), unique-local, multicast or reserved
/// addresses. `PAYHOOK_CALLBACK_ALLOWED_CIDRS` admits the merchant's real internal endpoints.
/// `PAYHOOK_FULFILLMENT_URL` is the operator's own configuration and is never checked.
///
/// The host is checked when the order is registered and again, resolved afresh, before every
/// delivery, which then connects to the address that was checked
/// (`HTTPClientRequest.connectAddress`): a name that resolves elsewhere a moment later (DNS
/// rebinding) cannot redirect it.
public struct CallbackDestinationPolicy: Sendable, Equatable {
    /// Internal networks admitted anyway; nil admits none.
    public let allowed: AddressAllowList?

    public init(allowed: AddressAllowList? = nil) {
        self.allowed = allowed
    }

    /// Networks that are not the public internet (IANA special-purpose registries). An
    /// IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
    static let nonPublic: AddressAllowList = {
        let networks = [
            "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
            "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
            "::/96", "::1/128", "64:ff9b::/96", "fc00::/7", "fe80::/10", "ff00::/8",
        ]
        switch AddressAllowList.parse(networks.joined(separator: ",")) {
        case .success(let list): return list
        case .failure(let failure): preconditionFailure("CallbackDestinationPolicy.nonPublic: \(failure.message)")
        }
    }()

    /// Why a callback URL was refused; the message names the host and the kind of address,
    /// never the path or query (which may carry tokens).
    package struct Refusal: Error, Sendable, CustomStringConvertible {
        package let description: String
    }

    /// Whether `address` (numeric text, an IPv6 zone such as `%eth0` ignored) may be called.
    /// Text that is not an address is refused: what cannot be judged is not called.
    package func admits(address: String) -> Bool {
        let bare = String(address.split(separator: "%", maxSplits: 1).first ?? "")
        guard Self.isNumericAddress(bare) else { return false }
        return !Self.nonPublic.allows(bare) || (allowed?.allows(bare) ?? false)
    }

    static func isNumericAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// Resolves `url`'s host and returns the address to connect to: the first one, when every
    /// address the name has is admitted.
    /// - Throws: `Refusal` when the URL has no host, the name does not resolve, or any of its
    ///   addresses is not admitted.
    package func destination(of url: URL) async throws(Refusal) -> String {
        guard let host = url.host, !host.isEmpty else { throw Refusal(description: "callback_url has no host") }
        let addresses = await Self.resolve(host)
        guard let first = addresses.first else {
            throw Refusal(description: "callback_url host \(host) does not resolve")
        }
        if let refused = addresses.first(where: { !admits(address: $0) }) {
            throw Refusal(description: "callback_url host \(host) resolves to \(refused), a loopback, link-local, private or otherwise non-public address; list its network in PAYHOOK_CALLBACK_ALLOWED_CIDRS if it is the merchant's own endpoint")
        }
        return String(first.split(separator: "%", maxSplits: 1).first ?? "")
    }

    /// The numeric addresses `host` resolves to (an address literal resolves to itself), in
    /// the resolver's order. `getaddrinfo` blocks, so it runs on a Dispatch thread, never on the
    /// cooperative pool.
    static func resolve(_ host: String) async -> [String] {
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var hints = addrinfo()
                hints.ai_family = AF_UNSPEC
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                var list: UnsafeMutablePointer<addrinfo>?
                guard getaddrinfo(name, nil, &hints, &list) == 0 else {
                    continuation.resume(returning: [])
                    return
                }
                defer { freeaddrinfo(list) }
                var addresses: [String] = []
                var entry = list
                while let current = entry {
                    var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                    if getnameinfo(current.pointee.ai_addr, current.pointee.ai_addrlen, &text, socklen_t(text.count),
                                   nil, 0, NI_NUMERICHOST) == 0 {
                        let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                        if !addresses.contains(address) { addresses.append(address) }
                    }
                    entry = current.pointee.ai_next
                }
                continuation.resume(returning: addresses)
            }
        }
    }
}
