//! What a listing shows of one transcript, computed from its lines and updated in place
//! as the transcript grows (transcripts are append-only, so only new lines are read).

use serde::{Deserialize, Serialize};
use strata_protocol::transcript::{Entry, MetadataEntry};

use crate::reader::line::{Head, flag, scan_head, scan_line};
use crate::reader::scan::check_text;

/// Longest first prompt kept, in characters (pasted prompts can be huge).
pub const FIRST_PROMPT_MAX_CHARS: usize = 500;

/// The listing's running summary of a transcript's first `scanned` bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScanState {
    /// Bytes of complete lines summarised so far.
    pub(crate) scanned: u64,
    /// A hash of the file's first bytes, to notice a file rewritten rather than appended.
    pub(crate) fingerprint: u64,
    pub(crate) message_count: usize,
    pub(crate) first_prompt: Option<String>,
    /// A slash command, shown when the user typed no prompt.
    pub(crate) command: Option<String>,
    pub(crate) created_at: Option<String>,
    pub(crate) updated_at: Option<String>,
    pub(crate) cwd: Option<String>,
    /// The git branch the session started on (the `gitBranch` of its first lines).
    #[serde(default)]
    pub(crate) git_branch: Option<String>,
    pub(crate) custom_title: Option<String>,
    pub(crate) ai_title: Option<String>,
    /// Lines that are not transcript records (not JSON, torn, a raw control character):
    /// skipped and counted, as resume and `sessions show` skip and count them.
    #[serde(default)]
    pub(crate) skipped_lines: usize,
}

/// How many leading bytes the fingerprint covers.
pub(crate) const FINGERPRINT_BYTES: usize = 256;

/// The fingerprint of a file that starts with `head`.
pub(crate) fn fingerprint(head: &[u8]) -> u64 {
    crate::reader::line::id_hash(&head[..head.len().min(FINGERPRINT_BYTES)])
}

impl ScanState {
    /// Summarises the complete lines of `buf` (the bytes after `self.scanned`), and
    /// advances `scanned` past them; a last line without its newline is left for later.
    pub(crate) fn feed(&mut self, buf: &[u8]) {
        let complete = memchr::memrchr(b'\n', buf).map_or(0, |k| k + 1);
        self.feed_lines(&buf[..complete]);
    }

    /// Summarises `buf`, whose lines are all complete (the last may lack its newline),
    /// and advances `scanned` past it.
    pub(crate) fn feed_lines(&mut self, buf: &[u8]) {
        let mut last_with_time = None;
        for (start, end) in lines(buf) {
            // A bad record is skipped (and counted) here too, so the listing's message
            // count is the one `show` and resume give. Walking every line in full, as
            // resume does, made a cold listing three times slower; instead the lines
            // that can be bad are found cheaply and only those are walked: text that is
            // not UTF-8 or holds a raw control character (checked at memory speed), a
            // line that does not end in `}` (torn, garbage), or one with no type in its
            // head. A structurally broken line that passes all three (a torn fragment
            // fused with a whole record) is counted as resume counts its record.
            let (head, sidechain) = scan_head(buf, start, end);
            let suspect = matches!(head, Head::Unknown)
                || buf[end - 1] != b'}'
                || check_text(buf, start, end).is_err();
            if suspect && scan_line(buf, start, end, 0).is_err() {
                self.skipped_lines += 1;
                continue;
            }
            let ty: &[u8] = match head {
                Head::Type(t) => &buf[t.start..t.end],
                Head::MessageFirst => b"assistant",
                Head::Unknown => b"",
            };
            let conversation = matches!(
                ty,
                b"user" | b"assistant" | b"system" | b"progress" | b"attachment"
            );
            if conversation {
                last_with_time = Some((start, end));
            }
            let wanted = match ty {
                b"user" | b"assistant" if !sidechain => {
                    self.message_count += 1;
                    (ty == b"user" && self.first_prompt.is_none())
                        || self.created_at.is_none()
                        || self.cwd.is_none()
                }
                b"custom-title" | b"ai-title" => {
                    self.title_line(&buf[start..end]);
                    false
                }
                _ => conversation && (self.created_at.is_none() || self.cwd.is_none()),
            };
            if wanted {
                self.details(buf, start, end, ty == b"user" && !sidechain);
            }
        }
        if let Some(t) = last_timestamp(buf, last_with_time) {
            self.updated_at = Some(t);
        }
        self.scanned += buf.len() as u64;
    }

    /// The summary with `tail` (the bytes after the last newline) counted too, when it
    /// is a whole record: a transcript whose last record lost only its newline (the
    /// reference agent's crash, a hand edit) still shows it. `None` when there is no such
    /// tail. `self` is left as it is, so the next refresh still reads the tail again: a
    /// line being written is not a record yet.
    pub(crate) fn with_tail(&self, tail: &[u8]) -> Option<ScanState> {
        let trimmed = tail.trim_ascii();
        if trimmed.is_empty() || scan_line(trimmed, 0, trimmed.len(), 0).is_err() {
            return None;
        }
        let mut line = Vec::with_capacity(trimmed.len() + 1);
        line.extend_from_slice(trimmed);
        line.push(b'\n');
        let mut whole = self.clone();
        whole.feed(&line);
        whole.scanned = self.scanned;
        Some(whole)
    }

    fn title_line(&mut self, line: &[u8]) {
        match std::str::from_utf8(line).ok().map(Entry::parse) {
            Some(Ok(Entry::Metadata(MetadataEntry::CustomTitle(e)))) => {
                self.custom_title = Some(e.custom_title)
            }
            Some(Ok(Entry::Metadata(MetadataEntry::AiTitle(e)))) => {
                self.ai_title = Some(e.ai_title)
            }
            _ => {}
        }
    }

    /// Reads a line in full for the creation time, the working directory and the first
    /// prompt.
    fn details(&mut self, buf: &[u8], start: usize, end: usize, user: bool) {
        let Ok(l) = scan_line(buf, start, end, 0) else {
            return;
        };
        if self.created_at.is_none() {
            self.created_at = l.text_of(buf, l.timestamp).map(|t| t.into_owned());
        }
        if self.cwd.is_none() {
            self.cwd = l.text_of(buf, l.cwd).map(|t| t.into_owned());
        }
        if self.git_branch.is_none() {
            self.git_branch = git_branch(&buf[start..end]);
        }
        if user
            && self.first_prompt.is_none()
            && !l.has(flag::META)
            && let Some(text) = l.text_of(buf, l.text)
        {
            match prompt_of(&text) {
                Prompt::Typed(p) => self.first_prompt = Some(p),
                Prompt::Command(c) if self.command.is_none() => self.command = Some(c),
                _ => {}
            }
        }
    }
}

/// A line's top-level `gitBranch` (a plain string; one with escapes is left out). The
/// key is found by its bytes: inside a JSON string its quotes would be escaped, so the
/// match is a key; the line reader keeps no span for it, since resume does not use it.
fn git_branch(line: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"gitBranch\":\"";
    let at = memchr::memmem::find(line, KEY)? + KEY.len();
    let len = memchr::memchr2(b'"', b'\\', &line[at..])?;
    if line[at + len] != b'"' {
        return None;
    }
    String::from_utf8(line[at..at + len].to_vec()).ok()
}

/// The timestamp of the last line that has one, searching backwards from `last`.
fn last_timestamp(buf: &[u8], last: Option<(usize, usize)>) -> Option<String> {
    let (_, mut end) = last?;
    loop {
        let start = memchr::memrchr(b'\n', &buf[..end]).map_or(0, |k| k + 1);
        if let Ok(l) = scan_line(buf, start, end, 0)
            && let Some(t) = l.text_of(buf, l.timestamp)
        {
            return Some(t.into_owned());
        }
        if start == 0 {
            return None;
        }
        end = start - 1;
        if end > 0 && buf[end - 1] == b'\r' {
            end -= 1;
        }
    }
}

/// The non-blank lines of `buf` as `(start, end)`, without `\r\n`.
fn lines(buf: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        while start < buf.len() {
            let end = memchr::memchr(b'\n', &buf[start..]).map_or(buf.len(), |k| start + k);
            let s = start;
            start = end + 1;
            let e = if end > s && buf[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            if e > s {
                return Some((s, e));
            }
        }
        None
    })
}

pub(crate) enum Prompt {
    /// Text the user typed.
    Typed(String),
    /// A slash command (`/name args`), used when nothing was typed.
    Command(String),
    /// Not a prompt (command output, notifications, interruptions).
    Skip,
}

/// Classifies the text of a user line for the first-prompt column.
pub(crate) fn prompt_of(text: &str) -> Prompt {
    let t = text.trim();
    if t.is_empty() || t.starts_with("[Request interrupted") {
        return Prompt::Skip;
    }
    if t.starts_with('<') {
        return match between(t, "<command-name>", "</command-name>") {
            Some(name) => {
                let args = between(t, "<command-args>", "</command-args>")
                    .unwrap_or("")
                    .trim();
                Prompt::Command(shorten(&if args.is_empty() {
                    name.to_owned()
                } else {
                    format!("{name} {args}")
                }))
            }
            None => Prompt::Skip,
        };
    }
    Prompt::Typed(shorten(t))
}

fn between<'t>(t: &'t str, open: &str, close: &str) -> Option<&'t str> {
    let from = t.find(open)? + open.len();
    let to = t[from..].find(close)? + from;
    Some(t[from..to].trim())
}

fn shorten(t: &str) -> String {
    match t.char_indices().nth(FIRST_PROMPT_MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &t[..cut]),
        None => t.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i25_6_the_summary_keeps_the_branch_the_session_started_on() {
        let line = |branch: &str, text: &str| {
            format!(
                r#"{{"parentUuid":null,"isSidechain":false,"cwd":"/w","sessionId":"s","gitBranch":"{branch}","type":"user","message":{{"role":"user","content":"{text}"}},"uuid":"u-{text}","timestamp":"2026-01-01T00:00:00.000Z"}}"#
            ) + "\n"
        };
        let mut state = ScanState::default();
        state.feed(line("feature/x", "first").as_bytes());
        state.feed(line("main", "second").as_bytes());
        assert_eq!(state.git_branch.as_deref(), Some("feature/x"));
        // A prompt that mentions the key is text, not the key.
        assert_eq!(
            git_branch(br#"{"message":"say \"gitBranch\":\"no\""}"#),
            None
        );
    }

    #[test]
    fn prompts_skip_command_output_and_keep_commands_as_a_fallback() {
        assert!(matches!(prompt_of("  fix the bug "), Prompt::Typed(p) if p == "fix the bug"));
        assert!(matches!(
            prompt_of("<local-command-stdout>x</local-command-stdout>"),
            Prompt::Skip
        ));
        assert!(matches!(
            prompt_of("[Request interrupted by user]"),
            Prompt::Skip
        ));
        assert!(matches!(
            prompt_of("<command-name>/review</command-name>\n<command-message>review</command-message>\n<command-args>PR 12</command-args>"),
            Prompt::Command(c) if c == "/review PR 12"
        ));
        let long = "x".repeat(FIRST_PROMPT_MAX_CHARS + 10);
        assert!(
            matches!(prompt_of(&long), Prompt::Typed(p) if p.chars().count() == FIRST_PROMPT_MAX_CHARS + 1)
        );
    }

    #[test]
    fn feeding_in_pieces_gives_the_same_summary_as_feeding_whole() {
        let corpus = strata_testkit::require_corpus!();
        let text = std::fs::read(corpus.join("spotter/short.jsonl")).unwrap_or_default();
        assert!(!text.is_empty());
        let mut whole = ScanState::default();
        whole.feed(&text);
        let mut pieces = ScanState::default();
        for cut in [1000, 7000, 20_000] {
            let from = pieces.scanned as usize;
            pieces.feed(&text[from..cut.min(text.len())]);
        }
        let from = pieces.scanned as usize;
        pieces.feed(&text[from..]);
        assert_eq!(whole, pieces);
        assert_eq!(whole.scanned as usize, text.len());
        assert_eq!(whole.message_count, 9);
    }

    /// Regression: a transcript whose last record had no newline (a whole record, not a
    /// torn one) was listed without it, while `sessions show` counted it.
    #[test]
    fn regression_a_whole_last_record_without_newline_is_shown() {
        let first = r#"{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-03-01T00:00:00.000Z","sessionId":"s","cwd":"/p"}"#;
        let last = r#"{"parentUuid":"u1","type":"user","message":{"role":"user","content":"more"},"uuid":"u2","timestamp":"2026-03-02T00:00:00.000Z","sessionId":"s","cwd":"/p"}"#;
        let text = format!("{first}\n{last}");
        let mut state = ScanState::default();
        state.feed(text.as_bytes());
        assert_eq!(state.message_count, 1, "the unterminated line waits");
        assert_eq!(state.scanned as usize, first.len() + 1);
        let tail = &text.as_bytes()[first.len() + 1..];
        let shown = state.with_tail(tail).unwrap();
        assert_eq!(shown.message_count, 2);
        assert_eq!(
            shown.updated_at.as_deref(),
            Some("2026-03-02T00:00:00.000Z")
        );
        assert_eq!(
            shown.scanned, state.scanned,
            "the tail is read again next time"
        );
        // A line cut short is not a record.
        assert_eq!(state.with_tail(&tail[..tail.len() - 10]), None);
        assert_eq!(state.with_tail(b"  \n"), None);
    }
}
