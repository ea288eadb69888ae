// PayhookPostgres
