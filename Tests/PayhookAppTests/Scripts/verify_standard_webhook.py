"""Verifies one payhook merchant callback with the reference Standard Webhooks library.

Usage: verify_standard_webhook.py SECRET WEBHOOK_ID TIMESTAMP SIGNATURE < body
Prints the verified payload's type and exits 0, or prints the library's error and exits 1.
"""
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

secret, webhook_id, timestamp, signature = sys.argv[1:5]
body = sys.stdin.buffer.read()
try:
    payload = Webhook(secret).verify(body, {
        "webhook-id": webhook_id,
        "webhook-timestamp": timestamp,
        "webhook-signature": signature,
    })
except WebhookVerificationError as error:
    print(f"rejected: {error}")
    sys.exit(1)
print(f"verified {payload['type']}")
