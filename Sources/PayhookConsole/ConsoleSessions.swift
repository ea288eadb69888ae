import Foundation
import PayhookAdmin
import PayhookCrypto
import PayhookOperations
import PayhookProcessing
import PayhookSubscriptions
import Synchronization

/// Signed-in console operators, in this process's memory.
///
/// Why memory and not a table: a session is worth nothing without the admin credential that
/// started it (a session whose credential was removed from the credentials file ends at its next
/// request), and losing them on restart only means signing in again. Behind a load balancer, pin the
/// admin listener's clients to one process (or sign in per process). Ids and CSRF tokens are 32
/// bytes from OpenSSL's generator; the CSRF token is compared in constant time.
final class ConsoleSessions: Sendable {
    struct Session: Sendable {
        let id: String
        /// Who the audit log names for this operator's actions: the credential signed in with,
        /// or the person a trusted reverse proxy named.
        let actor: String
        /// The name typed at sign-in, unchecked: shown and audited beside the actor, never as it.
        let actorNote: String?
        /// The credential that started the session; the session ends when it is no longer accepted.
        let credential: AdminCredential
        /// Every state-changing form of this session carries it.
        let csrfToken: String
        let expiresAt: Date
        /// A one-shot message for the next page (after a redirect).
        var flash: Flash?
    }

    struct Flash: Sendable {
        let kind: String
        let text: String
    }

    static let cookieName = "payhook_console"
    /// A fixed lifetime from sign-in: a forgotten tab stops working by the next shift.
    static let lifetime: TimeInterval = 8 * 3600
    /// Bounds memory if someone with the token signs in in a loop.
    static let maxSessions = 1000

    private let sessions = Mutex<[String: Session]>([:])
    private let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    static func randomToken() -> String {
        Hex.encode(SecureRandom.bytes(32))
    }

    /// Starts a session for `actor`; the oldest one makes room when the table is full.
    func start(actor: String, actorNote: String? = nil, credential: AdminCredential) -> Session {
        let at = now()
        let session = Session(id: Self.randomToken(), actor: actor, actorNote: actorNote, credential: credential,
                              csrfToken: Self.randomToken(),
                              expiresAt: at.addingTimeInterval(Self.lifetime), flash: nil)
        sessions.withLock { table in
            table = table.filter { $0.value.expiresAt > at }
            if table.count >= Self.maxSessions, let oldest = table.min(by: { $0.value.expiresAt < $1.value.expiresAt }) {
                table[oldest.key] = nil
            }
            table[session.id] = session
        }
        return session
    }

    /// The live session named by `id`, if any.
    func session(_ id: String?) -> Session? {
        guard let id, !id.isEmpty else { return nil }
        let at = now()
        return sessions.withLock { table in
            guard let session = table[id] else { return nil }
            guard session.expiresAt > at else {
                table[id] = nil
                return nil
            }
            return session
        }
    }

    func end(_ id: String) {
        _ = sessions.withLock { $0.removeValue(forKey: id) }
    }

    func setFlash(_ id: String, _ flash: Flash) {
        sessions.withLock { table in table[id]?.flash = flash }
    }

    /// The pending message, removed so it shows once.
    func takeFlash(_ id: String) -> Flash? {
        sessions.withLock { table in
            let flash = table[id]?.flash
            table[id]?.flash = nil
            return flash
        }
    }

    /// Whether `presented` is this session's CSRF token (constant time).
    static func csrfMatches(_ session: Session, _ presented: String?) -> Bool {
        guard let presented, !presented.isEmpty else { return false }
        return ConstantTime.equals(Array(presented.utf8), Array(session.csrfToken.utf8))
    }
}
