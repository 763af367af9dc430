-- Version 8 of the journal on Postgres.
--
-- journal_clock: the journal's one clock, in milliseconds since the Unix
-- epoch, which every time the journal writes or compares is read from
-- (parking, deciding, expiring), so that no process's own clock decides
-- when another process's approval expires: the server's clock
-- (clock_timestamp(), the time of the statement that reads it).
CREATE VIEW journal_clock AS SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) AS ms;
