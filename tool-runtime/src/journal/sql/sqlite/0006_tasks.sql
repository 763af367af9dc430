-- Version 5 of the journal on SQLite: the tasks of MCP revision 2026-07-28
-- (extension io.modelcontextprotocol/tasks). A task is written before the
-- response that names it; its call's effect is journaled as any durable
-- call's (run `mcp-task:<task id>`, call `<task id>`).
--
-- status: working | input_required | completed | failed | cancelled; only a
-- task not yet ended (working, input_required) moves, so one end wins.
CREATE TABLE journal_tasks (
    task_id TEXT PRIMARY KEY NOT NULL,
    user_id TEXT,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,             -- JSON
    status TEXT NOT NULL,
    status_message TEXT,
    result TEXT,                     -- JSON: the CallToolResult of an ended task
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    expires_at INTEGER               -- NULL: kept until pruned by hand
) STRICT;
