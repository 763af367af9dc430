-- Version 4 of the journal on Postgres: several processes may step one run at
-- once, so a step adds to the run instead of overwriting it.
--
-- version: raised by every write of the run, so that a process can tell a
-- newer record from an older one that answered it late.
-- last_calls: the digest of the call ids of the run's last step; a step
-- that re-sends exactly those is the same step again, not a new one.
ALTER TABLE journal_runs ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE journal_runs ADD COLUMN last_calls TEXT;

-- Failed calls per tool (for max_retries), added to by each step.
CREATE TABLE journal_run_failures (
    run_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    failures BIGINT NOT NULL,
    PRIMARY KEY (run_id, tool)
);
