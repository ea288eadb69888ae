import CMicroHTTPD

/// Owns a libmicrohttpd response object that many connections send.
///
/// `@unchecked Sendable` invariant: after `init` the object is never changed from Swift;
/// libmicrohttpd reference-counts it under its own mutex, so `MHD_queue_response` may use it
/// from any polling thread at once, and `deinit` only drops this owner's reference (a
/// connection still sending it keeps it alive until done).
final class PreparedResponse: @unchecked Sendable {
    let pointer: OpaquePointer?

    init(_ response: HTTPResponse) {
        pointer = HTTPExchange.build(response)
    }

    deinit {
        if let pointer { MHD_destroy_response(pointer) }
    }
}
