-- Queued work. States form a closed set; a job leaves `running` only by finishing, failing or
-- having its lease expire and being rescued.
CREATE TABLE jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             text        NOT NULL,
    payload          jsonb       NOT NULL DEFAULT '{}',
    unique_key       text UNIQUE,
    state            text        NOT NULL DEFAULT 'available'
        CHECK (state IN ('available', 'running', 'retryable', 'succeeded', 'discarded', 'cancelled')),
    attempt          integer     NOT NULL DEFAULT 0,
    max_attempts     integer     NOT NULL DEFAULT 25 CHECK (max_attempts > 0),
    run_at           timestamptz NOT NULL DEFAULT now(),
    lease_expires_at timestamptz,
    locked_by        text,
    errors           jsonb       NOT NULL DEFAULT '[]',
    created_at       timestamptz NOT NULL DEFAULT now(),
    finalized_at     timestamptz
);
CREATE INDEX jobs_due ON jobs (run_at, id) WHERE state IN ('available', 'retryable');
CREATE INDEX jobs_running_lease ON jobs (lease_expires_at) WHERE state = 'running';

CREATE TABLE dead_letters (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source      text        NOT NULL CHECK (source IN ('inbound_event', 'job')),
    source_id   bigint      NOT NULL,
    provider    text,
    reason      text        NOT NULL,
    error       text,
    status      text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'replayed', 'discarded')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    resolved_by text,
    note        text
);
-- At most one open dead letter per failed thing.
CREATE UNIQUE INDEX dead_letters_open_source ON dead_letters (source, source_id) WHERE status = 'open';
CREATE INDEX dead_letters_created ON dead_letters (created_at);

CREATE TABLE audit_log (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor   text        NOT NULL,
    action  text        NOT NULL,
    target  text,
    details jsonb       NOT NULL DEFAULT '{}',
    at      timestamptz NOT NULL DEFAULT now()
);
