//! Keeping tool results small enough for the transcript and the model's context.
//!
//! A result longer than [`MAX_INLINE_OUTPUT_CHARS`] keeps its beginning inline and the
//! whole text goes to [`ToolHooks::store_large_output`] (a side file next to the
//! transcript); the inline part ends with a note naming that file, so the model can
//! Read or Grep the rest instead of losing it. Known secrets are redacted (through
//! [`ToolHooks::redact`]) before the text is cut or stored.

use std::path::PathBuf;

use super::{ToolHooks, ToolOutput};

/// How many characters of a tool result stay inline.
pub const MAX_INLINE_OUTPUT_CHARS: usize = 30_000;

/// The result of capping: the text to send and, when it was cut, where the full text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Capped {
    pub(crate) text: String,
    pub(crate) stored_at: Option<PathBuf>,
    pub(crate) truncated: bool,
}

/// Caps `content` at [`MAX_INLINE_OUTPUT_CHARS`], offloading the full text when cut.
pub(crate) fn cap(content: String, tool_use_id: &str, hooks: &dyn ToolHooks) -> Capped {
    cap_at(content, MAX_INLINE_OUTPUT_CHARS, tool_use_id, hooks)
}

impl ToolOutput {
    /// This output with its content capped by [`cap`] (stored aside when long).
    pub(crate) fn capped(self, tool_use_id: &str, hooks: &dyn ToolHooks) -> ToolOutput {
        let capped = cap(self.content, tool_use_id, hooks);
        ToolOutput {
            content: capped.text,
            ..self
        }
    }
}

pub(crate) fn cap_at(
    content: String,
    max: usize,
    tool_use_id: &str,
    hooks: &dyn ToolHooks,
) -> Capped {
    // Before cutting: half a secret at the cut would not be recognised later.
    let content = match hooks.redact(&content) {
        std::borrow::Cow::Owned(redacted) => redacted,
        std::borrow::Cow::Borrowed(_) => content,
    };
    let Some(cut) = char_boundary_after(&content, max) else {
        return Capped {
            text: content,
            stored_at: None,
            truncated: false,
        };
    };
    let total = content.chars().count();
    let (note, stored_at) = match hooks.store_large_output(tool_use_id, &content) {
        Ok(path) => (
            format!(
                "\n\n[Output truncated: showing the first {max} of {total} characters. The full \
                 output was saved to {}; use Read (with offset and limit) or Grep on that file \
                 to see the rest.]",
                path.display()
            ),
            Some(path),
        ),
        Err(err) => (
            format!(
                "\n\n[Output truncated: showing the first {max} of {total} characters. The full \
                 output could not be saved ({err}); rerun with a narrower command to see the \
                 rest.]"
            ),
            None,
        ),
    };
    let mut text = content;
    text.truncate(cut);
    text.push_str(&note);
    Capped {
        text,
        stored_at,
        truncated: true,
    }
}

/// The byte index just after the first `max` characters, or `None` when `s` has at most
/// `max` characters.
pub(crate) fn char_boundary_after(s: &str, max: usize) -> Option<usize> {
    if s.len() <= max {
        return None; // at most `max` bytes, so at most `max` characters
    }
    s.char_indices().nth(max).map(|(i, _)| i)
}

/// `s` cut to `max` characters with a marker saying how much was dropped.
pub(crate) fn truncate_line(s: &str, max: usize) -> String {
    match char_boundary_after(s, max) {
        None => s.to_owned(),
        Some(cut) => {
            let dropped = s[cut..].chars().count();
            format!("{}… [line truncated, {dropped} more characters]", &s[..cut])
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Mutex;

    use serde_json::Value;

    use super::*;

    #[derive(Default)]
    struct Store(Mutex<Vec<(String, String)>>, bool);

    impl ToolHooks for Store {
        fn before_edit(&self, _: &Path) -> Result<(), String> {
            Ok(())
        }
        fn store_large_output(&self, id: &str, content: &str) -> Result<PathBuf, String> {
            if self.1 {
                return Err("disk full".into());
            }
            self.0.lock().unwrap().push((id.into(), content.into()));
            Ok(PathBuf::from("/x/tool-results").join(format!("{id}.txt")))
        }
        fn set_todos(&self, _: Value) {}
    }

    #[test]
    fn short_output_is_untouched_and_not_stored() {
        let hooks = Store::default();
        let c = cap_at("héllo".into(), 5, "t1", &hooks);
        assert_eq!(c.text, "héllo");
        assert!(!c.truncated);
        assert!(hooks.0.lock().unwrap().is_empty());
    }

    #[test]
    fn long_output_keeps_prefix_and_stores_everything() {
        let hooks = Store::default();
        let c = cap_at("ééééééé".into(), 3, "t1", &hooks);
        assert!(c.text.starts_with("ééé\n\n[Output truncated"), "{}", c.text);
        assert!(c.text.contains("first 3 of 7 characters"));
        assert!(c.text.contains("/x/tool-results/t1.txt"));
        assert_eq!(hooks.0.lock().unwrap()[0], ("t1".into(), "ééééééé".into()));
    }

    #[test]
    fn failed_store_says_so() {
        let hooks = Store(Mutex::default(), true);
        let c = cap_at("abcdef".into(), 2, "t1", &hooks);
        assert!(
            c.text.contains("could not be saved (disk full)"),
            "{}",
            c.text
        );
        assert_eq!(c.stored_at, None);
    }

    #[test]
    fn truncate_line_counts_dropped_chars() {
        assert_eq!(truncate_line("abc", 5), "abc");
        assert_eq!(
            truncate_line("abcdé", 3),
            "abc… [line truncated, 2 more characters]"
        );
    }
}
