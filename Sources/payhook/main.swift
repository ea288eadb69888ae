import Foundation
import PayhookApp

exit(await PayhookCLI.main(arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment))
