//! Where the reference agent's real transcripts are, for the tests that read them.
//!
//! The corpus is not part of the repository (it is test data from other projects, kept
//! beside the clone as `../shared/corpus`). Tests find it through one environment
//! variable, [`CORPUS_VAR`], so a test never guesses a path:
//!
//! - unset (a fresh clone): [`claude_code`] returns `None` after writing one line to
//!   stderr saying the real-corpus tests are skipped; the test returns early. The resume
//!   rules stay covered by the generated transcripts of [`crate::transcripts`].
//! - set: it must name a directory holding `claude-code/`; anything else panics with the
//!   path it tried, so CI (which always sets it, see `.ci/run`) fails instead of skipping.
//!
//! ```no_run
//! let Some(corpus) = strata_testkit::corpus::claude_code() else { return };
//! let short = corpus.join("spotter/short.jsonl");
//! # let _ = short;
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// The environment variable naming the corpus root (the directory holding `claude-code/`).
/// A relative path is taken from the workspace root.
pub const CORPUS_VAR: &str = "STRATA_CORPUS_DIR";

/// `<corpus>/claude-code`, or `None` when [`CORPUS_VAR`] is unset (said once per process
/// on stderr).
///
/// # Panics
///
/// When the variable is set but does not name a corpus: a test run that asked for the
/// corpus must not pass without it.
pub fn claude_code() -> Option<PathBuf> {
    let root = root()?;
    let dir = root.join("claude-code");
    assert!(
        dir.is_dir(),
        "{CORPUS_VAR}={} has no claude-code/ directory; point it at the corpus root \
         (the `shared/corpus` beside the clone) or unset it to skip the real-corpus tests",
        root.display()
    );
    Some(dir)
}

/// The corpus root named by [`CORPUS_VAR`], resolved against the workspace root; `None`
/// (after the one skip line) when unset or empty.
fn root() -> Option<PathBuf> {
    match std::env::var_os(CORPUS_VAR).filter(|v| !v.is_empty()) {
        Some(v) => {
            let p = PathBuf::from(v);
            Some(if p.is_absolute() {
                p
            } else {
                workspace_root().join(p)
            })
        }
        None => {
            say_skipped();
            None
        }
    }
}

fn workspace_root() -> PathBuf {
    // This crate is `crates/testkit` of the workspace.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Writes the skip line once per test binary. It goes to the stderr handle directly, not
/// through `eprintln!`, so the test harness's output capture does not swallow it under
/// plain `cargo test`; nextest shows it with the test's output (`.config/nextest.toml`
/// asks for that for passing tests too).
fn say_skipped() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let exe = std::env::current_exe().ok();
        let binary = exe
            .as_deref()
            .and_then(Path::file_stem)
            .and_then(|s| s.to_str())
            .map(|s| {
                s.rsplit_once('-')
                    .map_or(s, |(name, _hash)| name)
                    .to_owned()
            })
            .unwrap_or_else(|| "this test binary".to_owned());
        let _ = writeln!(
            std::io::stderr(),
            "{binary}: real-corpus tests skipped: {CORPUS_VAR} is not set \
             (.ci/run sets it to ../shared/corpus)"
        );
    });
}

/// Returns from the calling test when the corpus is not configured (a fresh clone: the
/// skip is said once on stderr); evaluates to the `claude-code/` directory otherwise.
///
/// ```no_run
/// #[test]
/// fn reads_the_corpus() {
///     let corpus = strata_testkit::require_corpus!();
///     assert!(corpus.join("spotter/short.jsonl").is_file());
/// }
/// ```
#[macro_export]
macro_rules! require_corpus {
    () => {
        match $crate::corpus::claude_code() {
            Some(dir) => dir,
            None => return,
        }
    };
}
