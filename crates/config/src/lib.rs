//! The strata configuration directory and the files in it.
//!
//! Everything strata keeps between runs lives under one directory (`$STRATA_CONFIG_DIR`,
//! else `~/.strata`) laid out like the reference agent's, plus per-project settings under
//! `<project>/.strata/`. This crate owns where those files are ([`paths`]) and — as it
//! grows — how settings sources are read, merged and watched, and how any of these files
//! is written safely (exclusive lock, re-read inside the lock, atomic replace).

pub mod paths;
