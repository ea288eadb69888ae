import PayhookPostgres

/// The migrations compiled into this binary from `sql/migrations` (see the EmbedMigrations plugin).
enum SchemaMigrations {
    static func all() throws(PostgresError) -> [Migration] {
        var migrations: [Migration] = []
        for file in EmbeddedMigrations.files {
            migrations.append(try Migration(fileName: file.name, sql: file.sql))
        }
        return migrations
    }
}
