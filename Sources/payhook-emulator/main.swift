import Dispatch
import Foundation
import PayhookEmulator

// payhook-emulator [--port N] [--host ADDR] [--charge-latency-ms N] [--charge-result PROVIDER=RESULT]...
//                  [--idempotency-window PROVIDER=SECONDS|never]...:
// serves the emulated provider APIs with a few demo resources until SIGINT or SIGTERM, for
// running payhook locally without provider access.

let usage = """
    usage: payhook-emulator [--port N] [--host ADDR] [--charge-latency-ms N] [--charge-result PROVIDER=RESULT]...
                            [--idempotency-window PROVIDER=SECONDS|never]...
      --charge-latency-ms N          answer every charge N ms after executing it
      --charge-result PROVIDER=RESULT  outcome of new charges of mercadopago, adyen or pxp:
                                     approved, pending, error or declined:CODE (repeatable)
      --idempotency-window PROVIDER=SECONDS|never
                                     how long mercadopago, adyen or pxp remembers an idempotency
                                     key (defaults: 86400, 604800, never); a resend after it
                                     executes a new charge (repeatable)

    """

/// What argv asks for.
struct Options {
    var configuration = ProviderEmulator.Configuration()
    /// Provider name (`mercadopago`, `adyen`, `pxp`) and the default outcome of its charges.
    var chargeResults: [(String, EmulatedChargeResult)] = []
}

/// Parses `PROVIDER=RESULT` as `--charge-result` takes it.
func parseChargeResult(_ text: String) -> (String, EmulatedChargeResult)? {
    let parts = text.split(separator: "=", maxSplits: 1)
    guard parts.count == 2, ["mercadopago", "adyen", "pxp"].contains(parts[0]) else { return nil }
    let provider = String(parts[0])
    let result: EmulatedChargeResult
    switch parts[1] {
    case "approved": result = .approved
    case "pending": result = .pending
    case "error": result = .error
    case let value where value.hasPrefix("declined:") && value.count > "declined:".count:
        result = .declined(code: String(value.dropFirst("declined:".count)))
    default: return nil
    }
    return (provider, result)
}

/// Parses `PROVIDER=SECONDS` or `PROVIDER=never` as `--idempotency-window` takes it.
func parseIdempotencyWindow(_ text: String) -> (String, Duration?)? {
    let parts = text.split(separator: "=", maxSplits: 1)
    guard parts.count == 2, ["mercadopago", "adyen", "pxp"].contains(parts[0]) else { return nil }
    if parts[1] == "never" { return (String(parts[0]), nil) }
    guard let seconds = Int(parts[1]), seconds >= 0 else { return nil }
    return (String(parts[0]), .seconds(seconds))
}

/// Parses argv; a failure carries the message to print (none for `--help`).
func parse(_ arguments: [String]) -> Result<Options, ParseFailure> {
    var options = Options()
    options.configuration.port = 8099
    var rest = arguments[...]
    while let argument = rest.popFirst() {
        switch argument {
        case "--port":
            guard let value = rest.popFirst(), let port = Int(value), (0...65535).contains(port) else {
                return .failure(ParseFailure(message: "--port needs a number from 0 to 65535"))
            }
            options.configuration.port = port
        case "--host":
            guard let value = rest.popFirst() else { return .failure(ParseFailure(message: "--host needs an address")) }
            options.configuration.host = value
        case "--charge-latency-ms":
            guard let value = rest.popFirst(), let milliseconds = Int(value), (0...30_000).contains(milliseconds) else {
                return .failure(ParseFailure(message: "--charge-latency-ms needs a number from 0 to 30000"))
            }
            options.configuration.chargeLatency = milliseconds == 0 ? nil : .milliseconds(milliseconds)
        case "--charge-result":
            guard let value = rest.popFirst(), let parsed = parseChargeResult(value) else {
                return .failure(ParseFailure(message:
                    "--charge-result needs PROVIDER=approved|pending|error|declined:CODE (mercadopago, adyen, pxp)"))
            }
            options.chargeResults.append(parsed)
        case "--idempotency-window":
            guard let value = rest.popFirst(), let (provider, window) = parseIdempotencyWindow(value) else {
                return .failure(ParseFailure(message: "--idempotency-window needs PROVIDER=SECONDS or PROVIDER=never (mercadopago, adyen, pxp)"))
            }
            switch provider {
            case "mercadopago": options.configuration.mercadoPagoIdempotencyWindow = window
            case "adyen": options.configuration.adyenIdempotencyWindow = window
            default: options.configuration.pxpIdempotencyWindow = window
            }
        case "-h", "--help":
            return .failure(ParseFailure(message: nil))
        default:
            return .failure(ParseFailure(message: "unknown argument \(argument)"))
        }
    }
    return .success(options)
}

struct ParseFailure: Error {
    let message: String?
}

/// Runs until a signal arrives. Nonisolated on purpose: the signal handlers run on a Dispatch
/// queue, and must not capture main-actor state (top-level variables of this file).
nonisolated func serve(_ options: Options) -> Never {
    let configuration = options.configuration
    let emulator: ProviderEmulator
    do {
        emulator = try ProviderEmulator(configuration: configuration)
        try emulator.start()
    } catch {
        FileHandle.standardError.write(Data("payhook-emulator: \(error)\n".utf8))
        exit(1)
    }
    emulator.seedDemoResources()
    for (provider, result) in options.chargeResults {
        switch provider {
        case "mercadopago": emulator.mercadoPago.setDefaultChargeResult(result)
        case "adyen": emulator.adyen.setDefaultChargeResult(result)
        default: emulator.pxp.setDefaultChargeResult(result)
        }
    }
    // Written straight to the file descriptor (not through stdio's buffer), so a supervising
    // script reading a pipe sees the base URLs at once.
    let banner = """
        payhook-emulator listening on \(configuration.host):\(emulator.port)
        PAYHOOK_MERCADOPAGO_BASE_URL=\(emulator.baseURL(for: .mercadopago).absoluteString)
        PAYHOOK_ADYEN_BASE_URL=\(emulator.baseURL(for: .adyen).absoluteString)
        PAYHOOK_PXP_BASE_URL=\(emulator.baseURL(for: .pxp).absoluteString)
        credentials: the ProviderEmulator.Configuration defaults (test values)

        """
    FileHandle.standardOutput.write(Data(banner.utf8))

    // Dispatch signal sources run the handler as ordinary code on a queue, not inside an
    // async-signal context; the default actions are ignored so the sources see the signals.
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    let queue = DispatchQueue(label: "payhook-emulator.signals")
    let sources = [SIGINT, SIGTERM].map { number in
        let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
        source.setEventHandler {
            emulator.stop()
            FileHandle.standardOutput.write(Data("payhook-emulator stopped\n".utf8))
            exit(0)
        }
        source.resume()
        return source
    }
    withExtendedLifetime(sources) { dispatchMain() }
}

switch parse(Array(CommandLine.arguments.dropFirst())) {
case .success(let options):
    serve(options)
case .failure(let failure):
    if let message = failure.message {
        FileHandle.standardError.write(Data("payhook-emulator: \(message)\n\(usage)".utf8))
        exit(64)
    }
    print(usage, terminator: "")
}
