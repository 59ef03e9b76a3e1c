//! Process-wide bootstrap state (BS-1 … BS-7). Not built yet.
