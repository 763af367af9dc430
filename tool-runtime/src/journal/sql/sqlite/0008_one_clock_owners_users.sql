-- Version 8 of the journal on SQLite.
--
-- journal_clock: the journal's one clock, in milliseconds since the Unix
-- epoch, which every time the journal writes or compares is read from
-- (parking, deciding, expiring), so that no process's own clock decides
-- when another process's approval expires. On SQLite the database lives
-- in the processes that open it: its clock is theirs, which processes on
-- one host share.
CREATE VIEW journal_clock AS SELECT CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) AS ms;
