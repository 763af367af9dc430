-- Version 8 of the journal on Postgres.
--
-- journal_clock: the journal's one clock, in milliseconds since the Unix
-- epoch, which every time the journal writes or compares is read from
-- (parking, deciding, expiring), so that no process's own clock decides
-- when another process's approval expires: the server's clock
-- (clock_timestamp(), the time of the statement that reads it).
CREATE VIEW journal_clock AS SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) AS ms;

-- user_id: the user of the run, recorded by the first process that records
-- the run: a keyed effect of the run is that user's, whichever process
-- (a supervisor's, say) sends the call.
ALTER TABLE journal_runs ADD COLUMN user_id TEXT;

-- A call re-sent is the same call whoever sends it: found by its run and
-- call id, whatever key an earlier version made for its effect.
DROP INDEX journal_calls_run;
CREATE INDEX journal_calls_run ON journal_calls (run_id, call_id);
