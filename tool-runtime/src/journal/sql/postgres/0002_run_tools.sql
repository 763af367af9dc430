-- Version 2 of the journal on Postgres: the tools a run executed are a set,
-- one row per tool, appended when the run first executes it, instead of a
-- JSON list in journal_runs rewritten whole on every step.

CREATE TABLE journal_run_tools (
    run_id TEXT NOT NULL,
    ordinal BIGINT NOT NULL,         -- 0, 1, ...: the order the run first executed them
    tool TEXT NOT NULL,
    PRIMARY KEY (run_id, ordinal),
    UNIQUE (run_id, tool)
);

-- Each run's list, each tool once, at its first place.
INSERT INTO journal_run_tools (run_id, ordinal, tool)
SELECT firsts.run_id, ROW_NUMBER() OVER (PARTITION BY firsts.run_id ORDER BY firsts.first) - 1, firsts.tool
FROM (SELECT runs.run_id AS run_id, item.value AS tool, MIN(item.n) AS first
      FROM journal_runs AS runs, jsonb_array_elements_text(runs.executed::jsonb) WITH ORDINALITY AS item(value, n)
      GROUP BY runs.run_id, item.value) AS firsts;

ALTER TABLE journal_runs DROP COLUMN executed;
