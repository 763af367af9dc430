-- Version 5 of the journal on SQLite: what the approvals inbox reads.
-- The pending calls newest first, the decisions newest first, and the
-- change mark (the newest park, decision, settling and finished call) that
-- an inbox polls: each an index, so that a poll reads a few index pages
-- however many approvals and calls the journal holds.

CREATE INDEX journal_approvals_parked_at ON journal_approvals (parked_at);
CREATE INDEX journal_approvals_decided_at ON journal_approvals (decided_at);
CREATE INDEX journal_approvals_settled_at ON journal_approvals (settled_at);
CREATE INDEX journal_calls_finished_at ON journal_calls (finished_at);
