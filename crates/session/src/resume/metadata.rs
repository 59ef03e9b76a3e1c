//! Session metadata and file-history snapshots recovered from a transcript's metadata
//! lines: the last line of each kind wins, a custom title beats an AI title.

use serde_json::Value;
use strata_protocol::transcript::{Entry, FileHistorySnapshot, MetadataEntry, PrLinkEntry};

use crate::reader::Transcript;
use crate::reader::line::{LineInfo, LineKind};

/// What the metadata lines say about a session (SP-3, SP-4).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionMetadata {
    /// The title the user chose (`custom-title`).
    pub custom_title: Option<String>,
    /// The generated title (`ai-title`).
    pub ai_title: Option<String>,
    /// The text of the `summary` line whose `leafUuid` is the newest entry of the live
    /// conversation that has one (summary lines in a file often describe other sessions).
    pub summary: Option<String>,
    /// The last prompt typed (`last-prompt`).
    pub last_prompt: Option<String>,
    /// `tag`.
    pub tag: Option<String>,
    /// `agent-name`.
    pub agent_name: Option<String>,
    /// `agent-color`.
    pub agent_color: Option<String>,
    /// `agent-setting`.
    pub agent_setting: Option<String>,
    /// The permission mode (`permission-mode`, else the last one a user line recorded).
    pub permission_mode: Option<String>,
    /// `mode`.
    pub mode: Option<String>,
    /// The worktree the session works in (`worktree-state`): `Some(Value::Null)` when it
    /// left its worktree, `None` when it never had one.
    pub worktree: Option<Value>,
    /// The linked pull request (`pr-link`).
    pub pr_link: Option<PrLinkEntry>,
}

impl SessionMetadata {
    /// The title to show: the custom title over the AI title.
    pub fn title(&self) -> Option<&str> {
        self.custom_title.as_deref().or(self.ai_title.as_deref())
    }

    fn apply(&mut self, m: MetadataEntry) {
        match m {
            // Chosen against the live chain by the caller.
            MetadataEntry::Summary(_) => {}
            MetadataEntry::CustomTitle(e) => self.custom_title = Some(e.custom_title),
            MetadataEntry::AiTitle(e) => self.ai_title = Some(e.ai_title),
            MetadataEntry::LastPrompt(e) => self.last_prompt = Some(e.last_prompt),
            MetadataEntry::Tag(e) => self.tag = Some(e.tag),
            MetadataEntry::AgentName(e) => self.agent_name = Some(e.agent_name),
            MetadataEntry::AgentColor(e) => self.agent_color = Some(e.agent_color),
            MetadataEntry::AgentSetting(e) => self.agent_setting = Some(e.agent_setting),
            MetadataEntry::PermissionMode(e) => self.permission_mode = Some(e.permission_mode),
            MetadataEntry::Mode(e) => self.mode = Some(e.mode),
            MetadataEntry::WorktreeState(e) => {
                self.worktree = Some(e.worktree_session.unwrap_or(Value::Null))
            }
            MetadataEntry::PrLink(e) => self.pr_link = Some(e),
            MetadataEntry::FileHistorySnapshot(_)
            | MetadataEntry::AttributionSnapshot(_)
            | MetadataEntry::QueueOperation(_)
            | MetadataEntry::ContentReplacement(_) => {}
        }
    }
}

/// The metadata lines of `t` in file order (those before a skipped boundary first).
fn metadata_lines(t: &Transcript) -> impl Iterator<Item = &LineInfo> {
    t.pre_boundary
        .iter()
        .chain(t.lines.iter())
        .filter(|l| matches!(l.kind, LineKind::Meta(_)))
}

/// The snapshot of a file-history snapshot line. Read directly (the line's other fields
/// are skipped): a resume reads one per live user message.
pub(crate) fn snapshot(t: &Transcript, l: &LineInfo) -> Option<FileHistorySnapshot> {
    #[derive(serde::Deserialize)]
    struct Line {
        snapshot: FileHistorySnapshot,
    }
    serde_json::from_slice::<Line>(t.whole(l)?)
        .ok()
        .map(|line| line.snapshot)
}

fn parse(t: &Transcript, l: &LineInfo) -> Option<MetadataEntry> {
    let text = std::str::from_utf8(t.whole(l)?).ok()?;
    match Entry::parse(text) {
        Ok(Entry::Metadata(m)) => Some(m),
        // A metadata line of an unexpected shape is kept in the file but cannot inform
        // the session; it is not worth failing a resume over.
        _ => None,
    }
}

/// What the metadata lines hold.
pub(crate) struct Recovered<'t> {
    pub(crate) meta: SessionMetadata,
    /// File-history snapshot lines, in file order, parsed only when needed.
    pub(crate) snapshots: Vec<&'t LineInfo>,
    /// `leafUuid` → summary text (the last line for a leaf wins).
    pub(crate) summaries: std::collections::HashMap<String, String>,
}

/// Recovers the metadata and finds the file-history snapshot lines of `t`.
pub(crate) fn recover(t: &Transcript) -> Recovered<'_> {
    let mut meta = SessionMetadata::default();
    let mut snapshots = Vec::new();
    let mut summaries = std::collections::HashMap::new();
    for l in metadata_lines(t) {
        if l.kind == LineKind::Meta(strata_protocol::transcript::EntryKind::FileHistorySnapshot) {
            snapshots.push(l);
            continue;
        }
        match parse(t, l) {
            Some(MetadataEntry::Summary(s)) => {
                if let Some(leaf) = s.leaf_uuid {
                    summaries.insert(leaf, s.summary);
                }
            }
            Some(m) => meta.apply(m),
            None => {}
        }
    }
    if meta.permission_mode.is_none() {
        meta.permission_mode = t
            .lines
            .iter()
            .enumerate()
            .rev()
            .find(|(_, l)| l.kind == LineKind::User && l.permission_mode.is_some())
            .and_then(|(i, l)| t.field(i, l.permission_mode))
            .map(|s| s.into_owned());
    }
    Recovered {
        meta,
        snapshots,
        summaries,
    }
}
