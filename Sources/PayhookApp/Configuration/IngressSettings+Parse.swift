import PayhookCore
import PayhookIngress
import PayhookHTTP

extension EnvironmentReader {
    mutating func ingressSettings(maxBodyBytes: Int) -> IngressSettings {
        var settings = IngressSettings()
        settings.maxConnections = integer("PAYHOOK_MAX_CONNECTIONS", default: settings.maxConnections, range: 1...100_000)
        settings.maxConnectionsPerIP = integer(
            "PAYHOOK_MAX_CONNECTIONS_PER_IP", default: settings.maxConnectionsPerIP, range: 0...100_000)
        if settings.maxConnectionsPerIP > settings.maxConnections {
            problem("PAYHOOK_MAX_CONNECTIONS_PER_IP", "must not exceed PAYHOOK_MAX_CONNECTIONS (\(settings.maxConnections))")
        }
        settings.requestTimeoutSeconds = integer(
            "PAYHOOK_REQUEST_TIMEOUT_SECONDS", default: settings.requestTimeoutSeconds, range: 1...300)
        settings.idleTimeoutSeconds = integer("PAYHOOK_IDLE_TIMEOUT_SECONDS", default: settings.idleTimeoutSeconds, range: 1...3600)
        settings.maxBodyMemoryBytes = integer(
            "PAYHOOK_MAX_BODY_MEMORY_BYTES", default: settings.maxBodyMemoryBytes, range: 0...(64 << 30))
        if settings.maxBodyMemoryBytes > 0 && settings.maxBodyMemoryBytes < maxBodyBytes {
            problem("PAYHOOK_MAX_BODY_MEMORY_BYTES", "must be 0 or at least PAYHOOK_MAX_BODY_BYTES (\(maxBodyBytes))")
        }
        var recording = RejectedRecordingSettings()
        recording.perSourceBurst = integer("PAYHOOK_REJECTED_RECORD_BURST", default: recording.perSourceBurst, range: 1...100_000)
        recording.perSourcePerMinute = integer(
            "PAYHOOK_REJECTED_RECORD_PER_MINUTE", default: recording.perSourcePerMinute, range: 0...600_000)
        recording.totalPerSecond = integer(
            "PAYHOOK_REJECTED_RECORD_MAX_PER_SECOND", default: recording.totalPerSecond, range: 1...100_000)
        settings.rejectedRecording = recording
        for provider in ProviderID.allCases {
            let name = "PAYHOOK_\(provider.rawValue.uppercased())_ALLOWED_CIDRS"
            guard let text = string(name) else { continue }
            switch AddressAllowList.parse(text) {
            case .success(let list): settings.allowedAddresses[provider] = list
            case .failure(let failure): problem(name, failure.message)
            }
        }
        return settings
    }
}
