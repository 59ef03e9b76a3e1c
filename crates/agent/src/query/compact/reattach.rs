//! Re-attaching recently read files after a compaction, within a budget.
//!
//! The summary names the files the agent worked with but not their contents; the agent
//! would read them again at once. The newest distinct files the Read tool read are read
//! again from disk (their current contents) and attached after the summary, as a meta
//! message: at most [`MAX_FILES`], [`MAX_FILE_CHARS`] each and [`BUDGET_CHARS`] together
//! (about 5k and 20k tokens).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_protocol::message::{ContentBlock, Message};

/// How many files are re-attached.
pub(crate) const MAX_FILES: usize = 5;
/// The most characters of one file.
pub(crate) const MAX_FILE_CHARS: usize = 20_000;
/// The most characters of all of them.
pub(crate) const BUDGET_CHARS: usize = 80_000;

/// The newest distinct files read with the Read tool in `messages`, newest first.
pub(crate) fn recent_reads(messages: &[Arc<Message>], cwd: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for message in messages.iter().rev() {
        let strata_protocol::message::MessageContent::Blocks(blocks) = &message.content else {
            continue;
        };
        for block in blocks.iter().rev() {
            let ContentBlock::ToolUse(u) = block else {
                continue;
            };
            if u.name != "Read" {
                continue;
            }
            let Some(path) = u.input.get("file_path").and_then(|p| p.as_str()) else {
                continue;
            };
            let path = cwd.join(path);
            if !out.contains(&path) {
                out.push(path);
            }
            if out.len() >= MAX_FILES {
                return out;
            }
        }
    }
    out
}

/// The text attaching `files`' current contents, `None` when none could be read.
pub(crate) fn attachment_text(files: &[PathBuf]) -> Option<String> {
    let mut out = String::new();
    let mut used = 0usize;
    for path in files {
        if used >= BUDGET_CHARS {
            break;
        }
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let Ok(bytes) = read_prefix(path, (MAX_FILE_CHARS * 4) as u64) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let cap = MAX_FILE_CHARS.min(BUDGET_CHARS - used);
        let (body, cut) = match text.char_indices().nth(cap) {
            Some((at, _)) => (&text[..at], true),
            None => (&text[..], false),
        };
        used += body.chars().count();
        out.push_str(&format!(
            "<system-reminder>\nThe file {} was read before the conversation was compacted. \
             Its current contents{}:\n```\n{}\n```\n</system-reminder>\n",
            path.display(),
            if cut {
                " (the beginning only; read it for the rest)"
            } else {
                ""
            },
            body.trim_end()
        ));
    }
    (!out.is_empty()).then_some(out)
}

fn read_prefix(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(max)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use strata_protocol::message::Role;

    #[test]
    fn recently_read_files_are_reattached_newest_first_within_budget() {
        let tmp = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..8).map(|i| format!("f{i}.txt")).collect();
        for n in &names {
            std::fs::write(tmp.path().join(n), "y".repeat(MAX_FILE_CHARS * 2)).unwrap();
        }
        let messages: Vec<Arc<Message>> = names
            .iter()
            .chain(std::iter::once(&names[7]))
            .enumerate()
            .map(|(i, n)| {
                Arc::new(Message::blocks(
                    Role::Assistant,
                    vec![ContentBlock::tool_use(
                        format!("t{i}"),
                        "Read",
                        json!({"file_path": tmp.path().join(n)}),
                    )],
                ))
            })
            .collect();
        let files = recent_reads(&messages, tmp.path());
        assert_eq!(files.len(), MAX_FILES);
        assert_eq!(files[0], tmp.path().join("f7.txt"));
        assert_eq!(files[1], tmp.path().join("f6.txt"));
        let text = attachment_text(&files).unwrap();
        // Each file is cut at its cap and the whole stays within the budget.
        assert!(
            text.len() <= BUDGET_CHARS + 2_000 * MAX_FILES,
            "{}",
            text.len()
        );
        assert!(text.contains("the beginning only"));
        assert!(text.contains("f7.txt"));
    }
}
