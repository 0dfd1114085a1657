-- Segments the user corrected: `text` holds what Izwi shows, exports and searches (the
-- edit), `original_text` what the model heard, NULL while the segment is unedited. The
-- FTS triggers of the first schema already follow `text`, so the index follows edits.
ALTER TABLE segments ADD COLUMN original_text TEXT;
