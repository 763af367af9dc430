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
