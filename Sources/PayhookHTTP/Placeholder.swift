// PayhookHTTP
