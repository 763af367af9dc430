-- Version 3 of the journal on SQLite: an approval belongs to one run's one
-- call. Approvals were keyed by call id alone, so two runs holding the same
-- call id shared one row: deciding one run's call decided the other's.
-- SQLite cannot change a primary key in place: the table is rebuilt.

CREATE TABLE journal_approvals_by_run (
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
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
    settled_at INTEGER,              -- NULL: its run has not settled it yet
    PRIMARY KEY (run_id, call_id)
) STRICT;

INSERT INTO journal_approvals_by_run
    (run_id, call_id, tool, input, user_id, parked_at, expires_at, decision, edited_input, reject_text, decided_by, decided_at, settled_at)
SELECT run_id, call_id, tool, input, user_id, parked_at, expires_at, decision, edited_input, reject_text, decided_by, decided_at, settled_at
FROM journal_approvals;

DROP TABLE journal_approvals;
ALTER TABLE journal_approvals_by_run RENAME TO journal_approvals;

CREATE INDEX journal_approvals_run ON journal_approvals (run_id) WHERE decision IS NULL;
CREATE INDEX journal_approvals_user ON journal_approvals (user_id) WHERE decision IS NULL;
CREATE INDEX journal_approvals_expiry ON journal_approvals (expires_at) WHERE decision IS NULL;
CREATE INDEX journal_approvals_unsettled ON journal_approvals (run_id) WHERE settled_at IS NULL;
