-- Version 7 of the journal on SQLite: nothing. On Postgres this version
-- narrows the inbox's notifications to finished calls with an approval;
-- SQLite has no notifications (an inbox polls the change mark), and the
-- versions of both backends stay in step.
SELECT 1;
