//! The demo session played by `strata -p "…" --replay demo`.
//!
//! A real session recorded in strata's own transcript format (`crates/cli/demo/demo.jsonl`),
//! built into the binary so it plays from anywhere, offline, on a fresh clone. It was
//! recorded by running strata against the scripted mock model server: the model looks
//! around the project with Glob and read-only Bash commands (run in parallel), runs an
//! `echo`, and answers. On replay the recorded answers play back while the tool calls
//! run for real, with permission checks, in the directory strata runs in.
//!
//! Bash commands need approval, and a headless run has nobody to ask, so the demo
//! brings allow rules for exactly the programs its recorded commands run
//! ([`ALLOWED_TOOLS`], added to `--allowedTools` and announced on stderr); deny rules
//! in the user's settings still win.
//!
//! Regenerate it with
//! `cargo nextest run -p strata --run-ignored only -E 'test(record_demo)'`
//! (the test `record_demo` in `crates/cli/tests/headless_demo.rs`).

/// The recorded transcript.
pub(crate) const TRANSCRIPT: &str = include_str!("../../demo/demo.jsonl");

/// Allow rules for the demo's own commands (all read-only programs).
pub(crate) const ALLOWED_TOOLS: [&str; 4] =
    ["Bash(ls:*)", "Bash(head:*)", "Bash(echo:*)", "Bash(pwd:*)"];
