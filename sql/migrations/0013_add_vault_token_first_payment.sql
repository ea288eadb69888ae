-- The provider's id of the first successful payment that carried a stored card: Mercado Pago's
-- merchant-initiated charges must name it as stored_credential.previous_transaction_reference
-- (the customer-present payment that registered the credential, transactions.payments[0].id of
-- its order). Set once, when the processor first sees such a payment; never overwritten.
ALTER TABLE vault_tokens ADD COLUMN first_payment_reference text;
