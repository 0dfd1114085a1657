-- Word timestamps of a segment, as a JSON array of {word, start, end, probability}
-- (seconds into the audio); empty when the transcription did not ask for them. They
-- belong to what the model heard: a segment's edit leaves them as they were.
ALTER TABLE segments ADD COLUMN words TEXT NOT NULL DEFAULT '[]';
