-- Version 7 of the journal on Postgres: a finished call notifies the inbox
-- (channel journal_inbox) only when it has an approval, the only calls an
-- inbox shows. Version 5 notified after every statement that finished any
-- call, and a transaction that notifies takes a lock at commit that every
-- other notifying commit of the database waits for: durable calls that
-- never asked for approval committed one at a time (1,000 concurrent runs:
-- about half the throughput without it).

DROP TRIGGER journal_calls_inbox ON journal_calls;

CREATE FUNCTION journal_inbox_notify_approved_call() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM journal_approvals WHERE run_id = NEW.run_id AND call_id = NEW.call_id) THEN
        PERFORM pg_notify('journal_inbox', '');
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER journal_calls_inbox AFTER UPDATE OF finished_at ON journal_calls
    FOR EACH ROW EXECUTE FUNCTION journal_inbox_notify_approved_call();
