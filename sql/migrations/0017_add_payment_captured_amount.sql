-- How much of a payment was captured, in ISO minor units: the sum of its captures that have not
-- failed. Adyen reports each capture as its own CAPTURE notification whose amount.value is what
-- that capture took, so partial captures add up (docs/providers.md, "Partial and multiple
-- captures"). NULL while no capture has been reported one by one: Mercado Pago and PXP report
-- fetched state, and their payments keep NULL here.
ALTER TABLE payments ADD COLUMN captured_minor bigint;

-- One row per capture, keyed by the capture's own pspReference; CAPTURE_FAILED marks it failed.
ALTER TABLE payment_adjustments DROP CONSTRAINT payment_adjustments_kind_check;
ALTER TABLE payment_adjustments ADD CONSTRAINT payment_adjustments_kind_check
    CHECK (kind IN ('refund', 'chargeback', 'chargeback_reversal', 'capture_failure', 'capture'));
