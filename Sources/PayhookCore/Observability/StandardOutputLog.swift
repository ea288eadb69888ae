import Foundation
import Synchronization

/// Writes log lines to stdout, one whole line per write, serialized so lines from different
/// threads never interleave.
package enum StandardOutputLog {
    private static let lock = Mutex(())

    package static func logger(level: Logger.Level) -> Logger {
        Logger(minimumLevel: level) { line in
            lock.withLock { _ in
                var bytes = Array(line.utf8)
                bytes.append(10)
                // One write(2) per line: no stdio buffer to flush or to share between threads.
                bytes.withUnsafeBytes { raw in
                    var offset = 0
                    while offset < raw.count {
                        let written = write(STDOUT_FILENO, raw.baseAddress! + offset, raw.count - offset)
                        if written <= 0 { break }
                        offset += written
                    }
                }
            }
        }
    }
}
