-- How a spoken turn went, as JSON (MessageMetrics): end of the user's speech to the
-- transcript, the first token and the first audio of the reply, and whether the user
-- interrupted the reply. NULL for typed messages that measured nothing.
ALTER TABLE messages ADD COLUMN metrics TEXT CHECK (metrics IS NULL OR json_valid(metrics));
