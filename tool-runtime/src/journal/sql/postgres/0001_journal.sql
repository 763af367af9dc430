-- Version 1 of the journal on Postgres. Times are milliseconds since the
-- Unix epoch and JSON is text, as on SQLite, so that both backends decode
-- a row the same way.

CREATE TABLE journal_runs (
    run_id TEXT PRIMARY KEY,
    step BIGINT NOT NULL,
    executed TEXT NOT NULL,          -- JSON array of tool names
    state TEXT NOT NULL,             -- active | ending | finished
    ended_by TEXT,
    updated_at BIGINT NOT NULL
);

CREATE TABLE journal_calls (
    effect_key TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,             -- JSON
    started_at BIGINT NOT NULL,
    finished_at BIGINT,             -- NULL: started, outcome unknown
    kind TEXT,
    text TEXT,
    structured TEXT,                 -- JSON
    error_code TEXT,
    status BIGINT,
    truncated BOOLEAN,
    ends_run BOOLEAN
);

CREATE INDEX journal_calls_run ON journal_calls (run_id);

CREATE TABLE journal_approvals (
    call_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,             -- JSON
    user_id TEXT,
    parked_at BIGINT NOT NULL,
    expires_at BIGINT,              -- NULL: never
    decision TEXT,                   -- NULL: pending | approve | approve_edited | reject
    edited_input TEXT,               -- JSON
    reject_text TEXT,
    decided_by TEXT,
    decided_at BIGINT,
    settled_at BIGINT                -- NULL: its run has not settled it yet
);

CREATE INDEX journal_approvals_run ON journal_approvals (run_id) WHERE decision IS NULL;
CREATE INDEX journal_approvals_user ON journal_approvals (user_id) WHERE decision IS NULL;
CREATE INDEX journal_approvals_expiry ON journal_approvals (expires_at) WHERE decision IS NULL;
CREATE INDEX journal_approvals_unsettled ON journal_approvals (run_id) WHERE settled_at IS NULL;
