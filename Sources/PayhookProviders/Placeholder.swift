// PayhookProviders
