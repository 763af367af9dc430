-- Version 8 of the journal on SQLite.
--
-- journal_clock: the journal's one clock, in milliseconds since the Unix
-- epoch, which every time the journal writes or compares is read from
-- (parking, deciding, expiring), so that no process's own clock decides
-- when another process's approval expires. On SQLite the database lives
-- in the processes that open it: its clock is theirs, which processes on
-- one host share.
CREATE VIEW journal_clock AS SELECT CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) AS ms;

-- user_id: the user of the run, recorded by the first process that records
-- the run: a keyed effect of the run is that user's, whichever process
-- (a supervisor's, say) sends the call.
ALTER TABLE journal_runs ADD COLUMN user_id TEXT;

-- A call re-sent is the same call whoever sends it: found by its run and
-- call id, whatever key an earlier version made for its effect.
DROP INDEX journal_calls_run;
CREATE INDEX journal_calls_run ON journal_calls (run_id, call_id);

-- Owners: each opened journal (a process) holds a lease, renewed while it
-- lives, until lease_until by the journal's clock. A call's effect names
-- the owner that started it, and a call an MCP session parks to wait for
-- its client names the owner waiting: once that owner's lease lapsed, no
-- one waits for the call to finish, and no decision on the parked call is
-- accepted (nothing would carry it out). owner NULL: no process owns the
-- row (written before version 8, or a call any process resumes).
CREATE TABLE journal_owners (
    owner TEXT PRIMARY KEY NOT NULL,
    lease_until INTEGER NOT NULL
) STRICT;
ALTER TABLE journal_calls ADD COLUMN owner TEXT;
ALTER TABLE journal_approvals ADD COLUMN owner TEXT;

-- The runs that replayed an effect journaled by another (a keyed effect,
-- shared by a user's runs): the effect is kept while any of them is.
CREATE TABLE journal_replays (
    effect_key TEXT NOT NULL,
    run_id TEXT NOT NULL,
    PRIMARY KEY (effect_key, run_id)
) STRICT;
CREATE INDEX journal_replays_run ON journal_replays (run_id);
