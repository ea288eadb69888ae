import Foundation
import PayhookApp

exit(await PayhookCLI.run(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment,
                          output: .standard))
