import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// IPv4 and IPv6 networks in CIDR notation, and whether a client address falls in one of them.
///
/// Used for `PAYHOOK_<PROVIDER>_ALLOWED_CIDRS`, the address ranges a provider publishes for its
/// webhooks. It sees the address of whoever opened the TCP connection: behind a reverse proxy
/// that is the proxy, so the list belongs on the proxy there (README, Deployment).
public struct AddressAllowList: Sendable, Equatable {
    /// One network: address bytes (4 or 16) and prefix length.
    package struct Network: Sendable, Equatable {
        let bytes: [UInt8]
        let prefixLength: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var remaining = prefixLength
            for index in 0..<bytes.count where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if address[index] & mask != bytes[index] & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    package struct ParseFailure: Error {
        package let message: String
    }

    let networks: [Network]

    /// Parses a comma-separated list such as `"203.0.113.0/24, 2001:db8::/32, 198.51.100.7"`
    /// (a bare address is a /32 or /128).
    package static func parse(_ text: String) -> Result<AddressAllowList, ParseFailure> {
        var networks: [Network] = []
        for part in text.split(separator: ",") {
            let entry = part.trimmingCharacters(in: .whitespaces)
            let pieces = entry.split(separator: "/", omittingEmptySubsequences: false)
            guard !entry.isEmpty, pieces.count <= 2, let bytes = Self.addressBytes(String(pieces[0])) else {
                return .failure(ParseFailure(message: "\"\(entry)\" is not an IPv4 or IPv6 address or CIDR network"))
            }
            let maximum = bytes.count * 8
            var prefix = maximum
            if pieces.count == 2 {
                guard let parsed = Int(pieces[1]), (0...maximum).contains(parsed) else {
                    return .failure(ParseFailure(message: "\"\(entry)\": the prefix length must be 0 to \(maximum)"))
                }
                prefix = parsed
            }
            networks.append(Network(bytes: bytes, prefixLength: prefix))
        }
        guard !networks.isEmpty else { return .failure(ParseFailure(message: "must list at least one CIDR network")) }
        return .success(AddressAllowList(networks: networks))
    }

    /// Whether `address` (as the HTTP server reports it, e.g. `"127.0.0.1"`, `"::1"`) is in a
    /// listed network. An IPv4-mapped IPv6 address is compared as IPv4. Also what callback
    /// destinations are judged by (`CallbackDestinationPolicy`).
    package func allows(_ address: String) -> Bool {
        guard var bytes = Self.addressBytes(address) else { return false }
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12...])
        }
        return networks.contains { $0.contains(bytes) }
    }

    /// 4 bytes for IPv4 text, 16 for IPv6 text, `nil` for anything else.
    package static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
