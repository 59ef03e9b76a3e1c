//! Keeping large tool outputs out of the transcript.
//!
//! A shell command can print megabytes; written inline, a few of those make a transcript
//! slow to resume and list. An output larger than [`INLINE_LIMIT_BYTES`] is stored whole
//! in `<session-id>/tool-results/<tool-use-id>.txt` beside the transcript, and the
//! `tool_result` content in the transcript becomes a short reference with a preview, in
//! the shape the reference agent writes (so either program resumes the other's sessions
//! and the model reads the same text):
//!
//! ```text
//! <persisted-output>
//! Output too large (141.2KB). Full output saved to: <absolute path of the .txt>
//!
//! Preview (first 2KB):
//! <the first ≤ 2,048 bytes of the output, cut at a line end when one is near>
//! ...
//! </persisted-output>
//! ```
//!
//! The file is written (temp file, fsync, rename, mode `0600`) *before* the reference is
//! returned, so a transcript never points at a file that is not there. Callers should
//! not also copy the full output into the entry's `toolUseResult`, or the transcript
//! grows anyway.

use std::io::Write;
use std::path::PathBuf;

use crate::layout::SessionLayout;

/// Outputs up to this many bytes stay inline in the transcript (50,000 bytes, about
/// 12,500 tokens: more than the model is usually shown at once).
pub const INLINE_LIMIT_BYTES: usize = 50_000;

/// Bytes of the output kept inline as a preview when it is stored aside.
pub const PREVIEW_BYTES: usize = 2_048;

/// Opening tag of a reference to a stored output.
pub const REFERENCE_OPEN: &str = "<persisted-output>";
/// Closing tag of a reference to a stored output.
pub const REFERENCE_CLOSE: &str = "</persisted-output>";

/// What to put in the transcript for one tool output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The `tool_result` content for the transcript: the output itself when small, else
    /// the reference with its preview.
    pub content: String,
    /// Where the full output was stored, when it was.
    pub stored_at: Option<PathBuf>,
}

/// Errors storing a tool output.
#[derive(Debug, thiserror::Error)]
pub enum ToolResultError {
    /// The tool-use id cannot be a file name (it holds a path separator or is empty).
    #[error(
        "tool-use id {id:?} cannot name a file in {dir}: use only letters, digits, `-` and `_`"
    )]
    BadId {
        /// The id given.
        id: String,
        /// The tool-results folder.
        dir: PathBuf,
    },
    /// Writing the file failed; nothing refers to it.
    #[error("cannot store the output of tool use {id} in {path}: {source}")]
    Io {
        /// The tool-use id.
        id: String,
        /// The file being written.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
}

/// Returns what to record for `output` of tool use `tool_use_id`, storing it aside first
/// when it is larger than [`INLINE_LIMIT_BYTES`].
pub fn persist_tool_output(
    layout: &SessionLayout,
    tool_use_id: &str,
    output: &str,
) -> Result<ToolOutput, ToolResultError> {
    if output.len() <= INLINE_LIMIT_BYTES {
        return Ok(ToolOutput {
            content: output.to_owned(),
            stored_at: None,
        });
    }
    let path = store_tool_output(layout, tool_use_id, output)?;
    Ok(ToolOutput {
        content: reference_text(&path, output),
        stored_at: Some(path),
    })
}

/// Stores `output` of tool use `tool_use_id` in the session's tool-results folder,
/// whatever its size, and returns the file's path (written, synced and renamed into
/// place: a reader never sees half a file).
///
/// [`persist_tool_output`] calls it for outputs over [`INLINE_LIMIT_BYTES`]; a tool that
/// shows the model less than that (its own inline cap is smaller) calls it directly, so
/// the part it cut is never lost.
pub fn store_tool_output(
    layout: &SessionLayout,
    tool_use_id: &str,
    output: &str,
) -> Result<PathBuf, ToolResultError> {
    let dir = layout.tool_results_dir();
    if tool_use_id.is_empty()
        || !tool_use_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ToolResultError::BadId {
            id: tool_use_id.to_owned(),
            dir,
        });
    }
    let path = layout.tool_result(tool_use_id);
    let io = |source| ToolResultError::Io {
        id: tool_use_id.to_owned(),
        path: path.clone(),
        source,
    };
    super::file::create_private_dirs(&dir).map_err(io)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tool-result-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .tempfile_in(&dir)
        .map_err(io)?;
    tmp.write_all(output.as_bytes()).map_err(io)?;
    tmp.as_file().sync_data().map_err(io)?;
    tmp.persist(&path).map_err(|e| io(e.error))?;
    super::file::sync_parent(&path).map_err(io)?;
    Ok(path)
}

/// The reference text for an output stored at `path`.
fn reference_text(path: &std::path::Path, output: &str) -> String {
    let preview = preview(output);
    let mut text = String::with_capacity(preview.len() + 256);
    text.push_str(REFERENCE_OPEN);
    text.push_str("\nOutput too large (");
    text.push_str(&human_size(output.len()));
    text.push_str("). Full output saved to: ");
    text.push_str(&path.to_string_lossy());
    text.push_str("\n\nPreview (first 2KB):\n");
    text.push_str(preview);
    if !preview.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("...\n");
    text.push_str(REFERENCE_CLOSE);
    text
}

/// The first [`PREVIEW_BYTES`] of `output`, on a char boundary, cut at the last line end
/// when one is in the second half (a whole line reads better than half of one).
fn preview(output: &str) -> &str {
    let mut end = PREVIEW_BYTES.min(output.len());
    while !output.is_char_boundary(end) {
        end -= 1;
    }
    let head = &output[..end];
    match head.rfind('\n') {
        Some(nl) if nl >= end / 2 => &head[..=nl],
        _ => head,
    }
}

/// `141KB` / `126.7KB` / `2.3MB`, as in the reference's references.
fn human_size(bytes: usize) -> String {
    let kb = bytes as f64 / 1024.0;
    if kb < 1024.0 {
        trim_decimal(kb, "KB")
    } else {
        trim_decimal(kb / 1024.0, "MB")
    }
}

fn trim_decimal(value: f64, unit: &str) -> String {
    let text = format!("{value:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_the_reference() {
        assert_eq!(human_size(141 * 1024), "141KB");
        assert_eq!(human_size(129_741), "126.7KB");
        assert_eq!(human_size(3 * 1024 * 1024), "3MB");
    }

    #[test]
    fn preview_cuts_on_a_char_boundary_and_prefers_a_line_end() {
        let s = "é".repeat(2000); // 4,000 bytes, 2-byte chars
        let p = preview(&s);
        assert!(p.len() <= PREVIEW_BYTES && p.len() >= PREVIEW_BYTES - 1);
        let lines = "x".repeat(99) + "\n";
        let s = lines.repeat(100);
        let p = preview(&s);
        assert!(p.ends_with('\n') && p.len() == 2000, "{}", p.len());
    }
}
