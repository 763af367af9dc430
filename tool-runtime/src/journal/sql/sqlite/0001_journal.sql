-- Version 1 of the journal on SQLite. STRICT tables: a value of the wrong
-- type is refused when written, not found when read. Times are
-- milliseconds since the Unix epoch; JSON is text.

CREATE TABLE journal_runs (
    run_id TEXT PRIMARY KEY NOT NULL,
    step INTEGER NOT NULL,
    executed TEXT NOT NULL,          -- JSON array of tool names
    state TEXT NOT NULL,             -- active | ending | finished
    ended_by TEXT,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE journal_calls (
    effect_key TEXT PRIMARY KEY NOT NULL,
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,             -- JSON
    started_at INTEGER NOT NULL,
    finished_at INTEGER,             -- NULL: started, outcome unknown
    kind TEXT,
    text TEXT,
    structured TEXT,                 -- JSON
    error_code TEXT,
    status INTEGER,
    truncated INTEGER,
    ends_run INTEGER
) STRICT;

CREATE INDEX journal_calls_run ON journal_calls (run_id);

CREATE TABLE journal_approvals (
    call_id TEXT PRIMARY KEY NOT NULL,
    run_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,             -- JSON
    user_id TEXT,
    parked_at INTEGER NOT NULL,
    expires_at INTEGER,              -- NULL: never
    decision TEXT,                   -- NULL: pending | approve | approve_edited | reject
    edited_input TEXT,               -- JSON
    reject_text TEXT,
    decided_by TEXT,
    decided_at INTEGER,
    settled_at INTEGER                -- NULL: its run has not settled it yet
) STRICT;

CREATE INDEX journal_approvals_run ON journal_approvals (run_id) WHERE decision IS NULL;
CREATE INDEX journal_approvals_user ON journal_approvals (user_id) WHERE decision IS NULL;
CREATE INDEX journal_approvals_expiry ON journal_approvals (expires_at) WHERE decision IS NULL;
CREATE INDEX journal_approvals_unsettled ON journal_approvals (run_id) WHERE settled_at IS NULL;
