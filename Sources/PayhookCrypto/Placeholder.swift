// PayhookCrypto
