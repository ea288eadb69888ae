public import Foundation
public import PayhookCore
import PayhookCrypto

/// Verifies Mercado Pago's `x-signature` header.
///
/// Mercado Pago signs a manifest, not the body:
/// `id:<data.id from the query>;request-id:<x-request-id>;ts:<ts>;`, HMAC-SHA256 keyed with the
/// secret's UTF-8 bytes, hex in `v1`. A pair whose value is missing is left out. Because the
/// body is unsigned, only the query's `data.id` is trusted: a body whose `data.id` is not the
/// signed one (or names one when none is signed) is refused as ``RejectionReason/dataIDMismatch``,
/// so the id processing reads from the stored body and the one in the dedup key are the signed
/// id. The body's `type`, `action` and `id` stay unsigned; the processors confirm state with a
/// GET of the signed id.
///
/// The case of `data.id` differs between Mercado Pago's documentation (lowercase) and its
/// SDKs (as received), so both are tried, lowercase first, and the body's id is compared with
/// the signed one regardless of ASCII case.
public struct MercadoPagoSignatureVerifier: WebhookVerifier {
    /// Secrets as UTF-8 bytes (``KeyEncoding/utf8``), current first.
    public let secrets: KeyRing
    /// How far `ts` may be from `now`, either direction, before the stale policy applies.
    public let tolerance: Duration
    /// Retries may reuse an old `ts`, hence `warn` by default.
    public let stalePolicy: StaleTimestampPolicy

    /// Headers stored with an accepted delivery.
    static let keptHeaderNames = ["x-signature", "x-request-id"]

    /// - Parameters:
    ///   - secrets: the webhook secrets, current first.
    ///   - tolerance: allowed clock distance of `ts`; UNCONFIRMED how old retries' `ts` get.
    ///   - stalePolicy: what to do with a verified delivery whose `ts` is outside `tolerance`.
    public init(secrets: KeyRing, tolerance: Duration = .seconds(300), stalePolicy: StaleTimestampPolicy = .warn) {
        self.secrets = secrets
        self.tolerance = tolerance
        self.stalePolicy = stalePolicy
    }

    /// Checks `x-signature` against the manifest, then the freshness of `ts`.
    ///
    /// The signature is checked first so that `stale_timestamp` only ever describes genuine
    /// (if old) deliveries, which is what the metric is for.
    public func verify(_ request: WebhookRequest, now: Date) -> VerificationResult {
        guard let header = request.nonEmptyHeader("x-signature") else { return .rejected(.missingSignature) }
        guard let signature = MercadoPagoSignatureHeader.parse(header),
              let v1 = try? Hex.decode(signature.v1)
        else { return .rejected(.malformedSignature) }

        let requestID = request.nonEmptyHeader("x-request-id")
        let rawDataID = request.queryParameter("data.id").flatMap { $0.isEmpty ? nil : $0 }
        let lowercasedDataID = rawDataID?.asciiLowercased()

        var matchedKey = secrets.indexOfKey(
            signing: Self.manifestBytes(dataID: lowercasedDataID, requestID: requestID, ts: signature.ts), as: v1)
        if let rawDataID, rawDataID != lowercasedDataID,
           let index = secrets.indexOfKey(signing: Self.manifestBytes(dataID: rawDataID, requestID: requestID, ts: signature.ts), as: v1) {
            // Keep the lowest key index across both spellings so rotation metrics are exact.
            matchedKey = min(matchedKey ?? index, index)
        }
        guard let keyIndex = matchedKey else { return .rejected(.signatureMismatch) }

        let body = JSONDocument(request.body)
        guard Self.bodyNamesSignedID(body, signedDataID: lowercasedDataID) else { return .rejected(.dataIDMismatch) }

        guard let warnings = TimestampFreshness.check(
            signature.ts, allowISO8601: false, now: now, tolerance: tolerance, policy: stalePolicy)
        else { return .rejected(.staleTimestamp) }

        return .verified(VerifiedDelivery(
            dedupKey: Self.dedupKey(body: body, rawBody: request.body, queryDataID: rawDataID),
            eventType: Self.eventType(body: body),
            keptHeaders: request.keptHeaders(Self.keptHeaderNames),
            warnings: warnings,
            keyIndex: keyIndex))
    }

    /// Whether the body's `data.id`, when it has one, is the signed id up to ASCII case.
    ///
    /// A body without `data.id` (or not JSON) names nothing and passes; processing refuses it.
    /// A `data.id` that is not a string or number, or one under a signature that covers no
    /// id, fails.
    /// - Parameter signedDataID: the query's `data.id`, ASCII-lowercased; `nil` when absent.
    static func bodyNamesSignedID(_ body: JSONDocument?, signedDataID: String?) -> Bool {
        guard let body, let node = body.member("id", of: body.member("data", of: body.root)) else { return true }
        guard let text = body.scalarText(node) else { return body.isNull(node) }
        return text.asciiLowercased() == signedDataID
    }

    /// The signed manifest; each pair ends with `;` and a missing value drops its pair.
    static func manifest(dataID: String?, requestID: String?, ts: String?) -> String {
        String(decoding: manifestBytes(dataID: dataID, requestID: requestID, ts: ts), as: UTF8.self)
    }

    /// ``manifest(dataID:requestID:ts:)`` as the bytes the HMAC covers, built into one array
    /// (interpolated Strings and their UTF-8 copy cost more than the MAC of this short text).
    static func manifestBytes(dataID: String?, requestID: String?, ts: String?) -> [UInt8] {
        var manifest: [UInt8] = []
        manifest.reserveCapacity(24 + (dataID?.utf8.count ?? 0) + (requestID?.utf8.count ?? 0) + (ts?.utf8.count ?? 0))
        func pair(_ label: StaticString, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            manifest.append(contentsOf: UnsafeBufferPointer(start: label.utf8Start, count: label.utf8CodeUnitCount))
            manifest.append(contentsOf: value.utf8)
            manifest.append(UInt8(ascii: ";"))
        }
        pair("id:", dataID)
        pair("request-id:", requestID)
        pair("ts:", ts)
        return manifest
    }

    /// `type:data.id:action:id`, with `data.id` from the signed query (a body's own `data.id`
    /// was checked against it, so a body never supplies it).
    ///
    /// Falls back to a digest of the body when it is not a JSON object or carries none of
    /// `type`, `action`, `id` (a key of bare separators would merge unrelated deliveries).
    static func dedupKey(body: JSONDocument?, rawBody: [UInt8], queryDataID: String?) -> String {
        guard let body, body.isObject(body.root) else { return DedupKey.sha256(rawBody) }
        let type = body.scalarText(body.member("type", of: body.root)) ?? ""
        let action = body.scalarText(body.member("action", of: body.root)) ?? ""
        let id = body.scalarText(body.member("id", of: body.root)) ?? ""
        guard !(type.isEmpty && action.isEmpty && id.isEmpty) else { return DedupKey.sha256(rawBody) }
        let dataID = queryDataID ?? ""
        var key = type
        key.reserveCapacity(type.utf8.count + dataID.utf8.count + action.utf8.count + id.utf8.count + 3)
        key += ":"
        key += dataID
        key += ":"
        key += action
        key += ":"
        key += id
        return key
    }

    /// `action` (e.g. `payment.updated`) when present, else `type` (e.g. `payment`).
    static func eventType(body: JSONDocument?) -> String? {
        guard let body else { return nil }
        if let action = body.scalarText(body.member("action", of: body.root)), !action.isEmpty { return action }
        if let type = body.scalarText(body.member("type", of: body.root)), !type.isEmpty { return type }
        return nil
    }
}
