import PayhookCore
import PayhookHTTP

/// What a provider emulator decided for one request; the server sends it, now or after `delay`.
struct EmulatorReply: Sendable {
    var status: Int
    var body: [UInt8]
    var delay: Duration? = nil
    var endpoint: String? = nil
    var resourceID: String? = nil

    static func json(_ status: Int, _ document: JSONOutput) -> EmulatorReply {
        EmulatorReply(status: status, body: document.bytes)
    }

    var response: HTTPResponse { .json(status, body) }

    func tagged(_ endpoint: String, _ id: String?) -> EmulatorReply {
        var copy = self
        copy.endpoint = endpoint
        copy.resourceID = id
        return copy
    }
}

/// The order every endpoint follows once the request is routed and authenticated: consume a
/// fault, then answer with it or with `handle()`.
///
/// - Parameters:
///   - fault: the fault consumed for this request, if any.
///   - errorBody: the provider's error document for a status.
///   - handle: the normal handling; runs for no fault and for `.timeout`, never otherwise.
func answer(
    fault: EmulatorFault?, errorBody: (Int) -> JSONOutput, handle: () -> EmulatorReply
) -> EmulatorReply {
    switch fault {
    case nil: return handle()
    case .status(let status)?: return .json(status, errorBody(status))
    case .notFound?: return .json(404, errorBody(404))
    case .timeout(let delay)?:
        var reply = handle()
        reply.delay = delay
        return reply
    }
}
