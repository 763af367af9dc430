-- Version 3 of the journal on Postgres: an approval belongs to one run's
-- one call. Approvals were keyed by call id alone, so two runs holding the
-- same call id shared one row: deciding one run's call decided the other's.

ALTER TABLE journal_approvals DROP CONSTRAINT journal_approvals_pkey;
ALTER TABLE journal_approvals ADD PRIMARY KEY (run_id, call_id);
