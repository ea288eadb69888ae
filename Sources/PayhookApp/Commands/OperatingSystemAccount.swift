#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The operating system's name for the user running payhook: the actor of an audited command.
///
/// Containers, cron and systemd often start processes without `$USER`, yet the process still
/// runs as some account; naming it in `audit_log` beats refusing the on-call engineer's replay.
enum OperatingSystemAccount {
    /// The login name of the real user id (`getpwuid_r(getuid())`); `nil` when that id has no
    /// passwd entry (a container started with an arbitrary numeric `--user`).
    static func currentName() -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        // getpwuid_r, not getpwuid: the CLI may run this while other threads use the C library.
        var buffer = [CChar](repeating: 0, count: 4096)
        let status = getpwuid_r(getuid(), &entry, &buffer, buffer.count, &result)
        guard status == 0, result != nil, let name = entry.pw_name else { return nil }
        let text = String(cString: name)
        return text.isEmpty ? nil : text
    }

    /// `uid:N` for an account without a passwd entry (a container's arbitrary `--user`): still
    /// the account, by number.
    static func numericName() -> String {
        "uid:\(getuid())"
    }
}
