//! Loading a session to resume it (SP-3): by id, by path, the newest of a project
//! (`--continue`), or as a copy under a new id (`--fork-session`).
//!
//! [`LoadedSession::load`] reads the transcript once, rebuilds the live conversation
//! ([`crate::chain`]), recovers metadata (title, tag, agent, permission mode, worktree,
//! PR link), the file-history snapshots of the live branch and the usage by model
//! (sub-agent transcripts included), and reports every repair and unreadable line. The
//! result is plain data: the agent turns it into state and asks
//! [`LoadedSession::model_messages`] for the conversation to send to the model. Message
//! bodies stay raw JSON until then, so loading touches each byte of a large transcript
//! about once.

mod fork;
mod locate;
mod metadata;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use strata_protocol::transcript::{EntryKind, FileHistorySnapshot};

pub use fork::{ForkOutcome, fork, fork_to};
pub(crate) use locate::subagent_transcripts;
pub use locate::{find_by_id, latest_in_project, resolve};
pub use metadata::SessionMetadata;

use crate::chain::{self, Chain, Repair};
use crate::model_messages::{LiveItem, ModelConversation, parse_body, to_model_messages};
use crate::reader::line::{LineInfo, LineKind, SystemSub, flag};
use crate::reader::{MalformedLine, ReadError, Transcript};
use crate::usage::{UsageCollector, UsageReport};

/// Errors locating, loading or forking a session.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The transcript could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// No transcript has this id.
    #[error("no session with id {id} (looked in {})", searched.display())]
    UnknownSession {
        /// The id asked for.
        id: String,
        /// Where it was looked for.
        searched: PathBuf,
    },
    /// The path given does not exist or is not a file.
    #[error("no transcript file at {}", path.display())]
    NoSuchFile {
        /// The path given.
        path: PathBuf,
    },
    /// The id cannot name a transcript (empty, or holding a path separator).
    #[error(
        "{id:?} is not a session id: use the id (the file name without .jsonl) or a path to a .jsonl file"
    )]
    InvalidId {
        /// The id given.
        id: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file holds no transcript line at all (`/etc/passwd`, a file of garbage):
    /// there is nothing to resume, and starting an empty session in its place would
    /// hide the mistake.
    #[error(
        "{} is not a session transcript: it holds no transcript line ({detail}); nothing was resumed — give the id or the path of a strata or Claude Code session",
        path.display()
    )]
    NotATranscript {
        /// The file.
        path: PathBuf,
        /// What the file holds instead: how many lines could not be read and the first
        /// one's place and problem, or that it is empty.
        detail: String,
    },
    /// The fork's transcript already exists; nothing was written.
    #[error("cannot fork into {}: the file already exists", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
}

/// `line 3 column 12: expected an object`.
fn describe_malformed(l: &MalformedLine) -> String {
    format!("line {} column {}: {}", l.line, l.column, l.reason)
}

/// A sub-agent transcript of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentSummary {
    /// The agent id (from `agent-<id>.jsonl`).
    pub agent_id: String,
    /// Its transcript.
    pub path: PathBuf,
    /// Its `user` and `assistant` lines.
    pub message_count: usize,
}

/// One entry of the live conversation as written in the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveEntry {
    /// Its `type`.
    pub kind: EntryKind,
    /// Its uuid.
    pub uuid: Option<String>,
    /// Its 1-based line number.
    pub line: u32,
    /// The line as written (one JSON object).
    pub json: String,
}

/// A session read from its transcript and rebuilt.
#[derive(Debug)]
pub struct LoadedSession {
    /// The session id (the transcript's file name without `.jsonl`).
    pub session_id: String,
    /// The transcript.
    pub path: PathBuf,
    transcript: Transcript,
    /// The live conversation, with the repairs it needed.
    pub chain: Chain,
    /// Title, tag, agent, permission mode, worktree, PR link.
    pub metadata: SessionMetadata,
    /// Usage and cost by model, sub-agents included.
    pub usage: UsageReport,
    /// The file-history snapshots of the user messages on the live branch, in order; the
    /// last one is the state to rewind from.
    pub file_history: Vec<FileHistorySnapshot>,
    /// The newest snapshot of the whole file (live or not), so backup versions continue
    /// where they stopped.
    pub latest_snapshot: Option<FileHistorySnapshot>,
    /// Sub-agent transcripts (both layouts).
    pub subagents: Vec<SubagentSummary>,
}

impl LoadedSession {
    /// Loads the transcript at `path` and everything that belongs to it.
    pub fn load(path: &Path) -> Result<Self, ResumeError> {
        if !path.is_file() {
            return Err(ResumeError::NoSuchFile {
                path: path.to_path_buf(),
            });
        }
        let session_id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut transcript = Transcript::read_for_resume(path)?;
        let mut chain = chain::build(&transcript);
        if transcript.skipped_bytes() > 0 && !starts_at_boundary(&transcript, &chain) {
            // The live conversation reaches behind the last boundary (or a line was lost
            // right after it): read everything after all.
            transcript.read_everything()?;
            chain = chain::build(&transcript);
        }
        let metadata::Recovered {
            meta: mut metadata,
            snapshots,
            summaries,
        } = metadata::recover(&transcript);
        metadata.summary = chain.entries.iter().rev().find_map(|&i| {
            let uuid = transcript.field(i as usize, transcript.lines[i as usize].uuid)?;
            summaries.get(uuid.as_ref()).cloned()
        });
        let (file_history, latest_snapshot) = live_snapshots(&transcript, &chain, &snapshots);
        let subagents_found = subagent_transcripts(path, &session_id);
        let mut usage = UsageCollector::new();
        usage.add(&transcript);
        let mut subagents = Vec::new();
        for (agent_id, sub_path) in subagents_found {
            // An unreadable sub-agent file costs its own numbers, not the session.
            let Ok(sub) = Transcript::read(&sub_path) else {
                continue;
            };
            usage.add(&sub);
            let message_count = sub
                .lines
                .iter()
                .filter(|l| matches!(l.kind, LineKind::User | LineKind::Assistant))
                .count();
            subagents.push(SubagentSummary {
                agent_id,
                path: sub_path,
                message_count,
            });
        }
        Ok(Self {
            session_id,
            path: path.to_path_buf(),
            usage: usage.report(),
            transcript,
            chain,
            metadata,
            file_history,
            latest_snapshot,
            subagents,
        })
    }

    /// Lines that could not be read (skipped), with line, column and reason.
    pub fn malformed(&self) -> &[MalformedLine] {
        self.transcript.malformed()
    }

    /// How many lines are transcript entries: JSON objects whose `type` is one the
    /// format knows (messages, system lines, progress, attachments, metadata).
    pub fn transcript_line_count(&self) -> usize {
        let t = &self.transcript;
        t.lines
            .iter()
            .chain(&t.pre_boundary)
            .filter(|l| l.kind != LineKind::Unknown)
            .count()
    }

    /// Whether this can be resumed: an error naming the file when it holds no transcript
    /// line at all (then it is not a session; see [`ResumeError::NotATranscript`]).
    pub fn check_resumable(&self) -> Result<(), ResumeError> {
        if self.transcript_line_count() > 0 {
            return Ok(());
        }
        let malformed = self.malformed();
        let detail = match malformed.first() {
            Some(first) => format!(
                "{} unreadable line(s), the first at {}",
                malformed.len(),
                describe_malformed(first)
            ),
            None if self.transcript.entry_count() > 0 => {
                "only JSON objects without a transcript entry's type".to_owned()
            }
            None => "the file is empty".to_owned(),
        };
        Err(ResumeError::NotATranscript {
            path: self.path.clone(),
            detail,
        })
    }

    /// The warning to give when resuming skipped unreadable lines (with their count and
    /// the first one's place); `None` when every line was read.
    pub fn skipped_lines_warning(&self) -> Option<String> {
        let malformed = self.malformed();
        let first = malformed.first()?;
        Some(format!(
            "{} unreadable line(s) of {} were skipped (the first at {}); the rest of the session was resumed",
            malformed.len(),
            self.path.display(),
            describe_malformed(first)
        ))
    }

    /// Gaps bridged and cycles cut while rebuilding the conversation.
    pub fn repairs(&self) -> &[Repair] {
        &self.chain.repairs
    }

    /// The uuid of the live conversation's last entry.
    pub fn leaf_uuid(&self) -> Option<String> {
        let i = self.chain.leaf? as usize;
        self.transcript
            .field(i, self.transcript.lines[i].uuid)
            .map(Cow::into_owned)
    }

    /// The entries of the live conversation, in order, as written. Resume keeps only the
    /// fields it needs in memory, so the lines are read back from the transcript; this
    /// fails if the file was rewritten meanwhile.
    pub fn live_entries(&self) -> Result<Vec<LiveEntry>, ResumeError> {
        let t = &self.transcript;
        let indices: Vec<u32> = self
            .chain
            .entries
            .iter()
            .copied()
            .filter(|&i| kind_of(t.lines[i as usize].kind).is_some())
            .collect();
        let texts = t.lines_as_written(&indices)?;
        Ok(indices
            .iter()
            .zip(texts)
            .filter_map(|(&i, bytes)| {
                let l = &t.lines[i as usize];
                Some(LiveEntry {
                    kind: kind_of(l.kind)?,
                    uuid: t.text(l, l.uuid).map(Cow::into_owned),
                    line: l.number,
                    json: String::from_utf8_lossy(&bytes).into_owned(),
                })
            })
            .collect())
    }

    /// The uuids of the live conversation's entries, in order.
    pub fn live_uuids(&self) -> Vec<String> {
        let t = &self.transcript;
        self.chain
            .entries
            .iter()
            .filter_map(|&i| {
                t.field(i as usize, t.lines[i as usize].uuid)
                    .map(Cow::into_owned)
            })
            .collect()
    }

    /// How many `user` and `assistant` entries the live conversation has.
    pub fn message_count(&self) -> usize {
        self.chain
            .entries
            .iter()
            .filter(|&&i| {
                matches!(
                    self.transcript.lines[i as usize].kind,
                    LineKind::User | LineKind::Assistant
                )
            })
            .count()
    }

    /// The working directory recorded by the last live entry that has one.
    pub fn cwd(&self) -> Option<String> {
        let t = &self.transcript;
        self.chain
            .entries
            .iter()
            .rev()
            .find_map(|&i| t.field(i as usize, t.lines[i as usize].cwd))
            .or_else(|| {
                t.lines
                    .iter()
                    .enumerate()
                    .find_map(|(i, l)| t.field(i, l.cwd))
            })
            .map(Cow::into_owned)
    }

    /// Bytes before the last compact boundary that were skipped rather than parsed.
    pub fn skipped_bytes(&self) -> u64 {
        self.transcript.skipped_bytes()
    }

    /// The conversation to send to the model, by the rules of `COMPAT.md`.
    ///
    /// The messages were parsed while the transcript was read; the first call moves them
    /// into the conversation (no copy), later calls read them from the file again.
    pub fn model_messages(&mut self) -> ModelConversation {
        let t = &mut self.transcript;
        let mut items = Vec::with_capacity(self.chain.entries.len());
        let mut unreadable = Vec::new();
        let mut from_file: Vec<(usize, u32)> = Vec::new();
        for &i in &self.chain.entries {
            let taken = t.lines[i as usize].body.take();
            let l = &t.lines[i as usize];
            let item = match l.kind {
                LineKind::User | LineKind::Assistant => {
                    if let Some(body) = taken {
                        *body
                    } else if l.has(flag::BAD_BODY) {
                        unreadable.push(l.number);
                        LiveItem::Other
                    } else if l.message.is_some() {
                        let user = l.kind == LineKind::User;
                        match l.message.and_then(|m| parse_body(user, t.raw(l, m))) {
                            Some(item) => item,
                            None => {
                                unreadable.push(l.number);
                                LiveItem::Other
                            }
                        }
                    } else {
                        from_file.push((items.len(), i));
                        LiveItem::Other
                    }
                }
                LineKind::System(SystemSub::LocalCommand) => match t.text(l, l.text) {
                    Some(text) => LiveItem::LocalCommand(text.into_owned()),
                    None => LiveItem::Other,
                },
                _ => LiveItem::Other,
            };
            items.push(item);
        }
        if !from_file.is_empty() {
            let indices: Vec<u32> = from_file.iter().map(|&(_, i)| i).collect();
            let lines = t.lines_as_written(&indices).unwrap_or_default();
            for (k, &(at, i)) in from_file.iter().enumerate() {
                let l = &t.lines[i as usize];
                match lines
                    .get(k)
                    .and_then(|line| body_of_line(l.kind == LineKind::User, line))
                {
                    Some(item) => items[at] = item,
                    None => unreadable.push(l.number),
                }
            }
            unreadable.sort_unstable();
        }
        let mut conv = to_model_messages(items);
        conv.unreadable_lines = unreadable;
        conv
    }
}

/// The message of a whole transcript line, parsed.
fn body_of_line(user: bool, line: &[u8]) -> Option<LiveItem> {
    #[derive(serde::Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        message: &'a serde_json::value::RawValue,
    }
    let l: Line<'_> = serde_json::from_slice(line).ok()?;
    parse_body(user, l.message.get().as_bytes())
}

/// Whether the chain starts at the compact boundary the reader skipped to, without a
/// repair: then nothing behind the boundary can be live.
fn starts_at_boundary(t: &Transcript, chain: &Chain) -> bool {
    let bridged = chain
        .repairs
        .iter()
        .any(|r| matches!(r, Repair::BridgedGap { .. }));
    let first = chain.entries.first().map(|&i| &t.lines[i as usize]);
    !bridged
        && first.is_some_and(|l| {
            l.kind == LineKind::System(SystemSub::CompactBoundary) && l.parent.is_none()
        })
}

fn kind_of(k: LineKind) -> Option<EntryKind> {
    Some(match k {
        LineKind::User => EntryKind::User,
        LineKind::Assistant => EntryKind::Assistant,
        LineKind::System(_) => EntryKind::System,
        LineKind::Attachment => EntryKind::Attachment,
        LineKind::Progress => EntryKind::Progress,
        LineKind::Meta(k) => k,
        LineKind::Unknown => return None,
    })
}

/// The snapshots of user messages on the live chain (the last line per message wins:
/// updates repeat the whole snapshot), in chain order; and the newest snapshot overall.
/// Only those lines are parsed.
fn live_snapshots(
    t: &Transcript,
    chain: &Chain,
    lines: &[&LineInfo],
) -> (Vec<FileHistorySnapshot>, Option<FileHistorySnapshot>) {
    let latest = lines.last().and_then(|l| metadata::snapshot(t, l));
    let mut by_message: crate::chain::HashedMap<&LineInfo> = crate::chain::HashedMap::default();
    for l in lines {
        if l.msg_h != 0 {
            by_message.insert(l.msg_h, l);
        }
    }
    let live = chain
        .entries
        .iter()
        .map(|&i| &t.lines[i as usize])
        .filter(|l| l.kind == LineKind::User && l.uuid_h != 0)
        .filter_map(|l| {
            let snap = by_message.remove(&l.uuid_h)?;
            // The hash matched; make sure the ids really do.
            (t.raw(snap, snap.msg_id?) == t.raw(l, l.uuid?)).then_some(snap)
        })
        .filter_map(|snap| metadata::snapshot(t, snap))
        .collect();
    (live, latest)
}
