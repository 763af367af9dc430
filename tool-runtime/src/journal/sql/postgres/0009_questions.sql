-- Version 9 of the journal on Postgres: the questions a call asks. A parked call
-- (journal_approvals) is an approval of the call, or a question its tool
-- asked while it ran (a form for its user, a completion from the client's
-- model, the client's roots), keyed by its run and its id: an approval's
-- id is its call's, a tool's nth question's is <call id>#<n>.
--
-- kind: approval | form | sample | roots; every row before version 9 is
-- an approval.
-- question: JSON, what the row asks: an approval's binding as a permit
-- (the digests of its arguments and of its tool's name, input schema and
-- policy), a tool's question (its call, its position, what it asks).
-- NULL: an approval parked before version 9, bound to its arguments and
-- user only.
--
-- A decision may now be 'answer' (the answer in edited_input, JSON) or
-- 'cancel' (neither), beside approve, approve_edited and reject.

ALTER TABLE journal_approvals ADD COLUMN kind TEXT NOT NULL DEFAULT 'approval';
ALTER TABLE journal_approvals ADD COLUMN question TEXT;
