-- Version 5 of the journal on Postgres: what the approvals inbox reads.
-- The same indexes as on SQLite (pending calls and decisions newest first,
-- the change mark), and a notification on the channel journal_inbox after
-- every statement that parks, decides, expires or settles an approval or
-- finishes a call, so that an inbox listening there updates at once
-- instead of polling. A notification carries no payload (the inbox reads
-- what changed), so the ones of one transaction fold into one.

CREATE INDEX journal_approvals_parked_at ON journal_approvals (parked_at);
CREATE INDEX journal_approvals_decided_at ON journal_approvals (decided_at);
CREATE INDEX journal_approvals_settled_at ON journal_approvals (settled_at);
CREATE INDEX journal_calls_finished_at ON journal_calls (finished_at);

CREATE FUNCTION journal_inbox_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('journal_inbox', '');
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER journal_approvals_inbox AFTER INSERT OR UPDATE ON journal_approvals
    FOR EACH STATEMENT EXECUTE FUNCTION journal_inbox_notify();
CREATE TRIGGER journal_calls_inbox AFTER UPDATE OF finished_at ON journal_calls
    FOR EACH STATEMENT EXECUTE FUNCTION journal_inbox_notify();
