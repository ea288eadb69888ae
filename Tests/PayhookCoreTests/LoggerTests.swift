import Foundation
import Synchronization
import Testing
@testable import PayhookCore

@Suite("Logger")
struct LoggerTests {
    final class Lines: Sendable {
        let storage = Mutex<[String]>([])
        var all: [String] { storage.withLock { $0 } }
    }

    @Test("each line is one JSON object carrying context and fields, with control characters escaped")
    func writesJSONLines() throws {
        let lines = Lines()
        let logger = Logger(clock: { Date(timeIntervalSince1970: 0) }) { line in lines.storage.withLock { $0.append(line) } }
            .with(["provider": "adyen"])
        logger.info("accepted \"x\"\n", ["inbound_event.id": 42, "ok": true])
        let line = try #require(lines.all.first)
        #expect(!line.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["msg"] as? String == "accepted \"x\"\n")
        #expect(object["provider"] as? String == "adyen")
        #expect(object["inbound_event.id"] as? Int == 42)
        #expect(object["level"] as? String == "info")
        #expect((object["ts"] as? String)?.hasPrefix("1970-01-01T00:00:00") == true)
    }

    @Test("lines below the minimum level are dropped")
    func filtersLevels() {
        let lines = Lines()
        let logger = Logger(minimumLevel: .warning) { line in lines.storage.withLock { $0.append(line) } }
        logger.info("quiet")
        logger.error("loud")
        #expect(lines.all.count == 1)
    }
}
