public func migrationsProbe() -> [String] { EmbeddedMigrations.files.map { $0.name + ":" + $0.sql } }
