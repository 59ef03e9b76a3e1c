//! Transcript entries: one JSON object per line of a session file, in the reference format.
