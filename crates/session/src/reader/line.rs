//! What the loader keeps of one transcript line: where it is, its kind, and the handful of
//! fields the chain, the metadata and the cost need. Everything else stays in the buffer,
//! unparsed, until someone asks for it (a live message body, a snapshot).
//!
//! Positions are stored relative to the line's start as `u32`s so a line's record stays
//! around 200 bytes: a 100 MB transcript has ~50,000 lines and their records must stay a
//! small fraction of the file (the resume target is peak memory ≤ 1.5× the file size).

use strata_protocol::transcript::EntryKind;

use super::scan::{ScanResult, Scanner, StrSpan};

/// A string inside one line: offset from the line start and length; the top bit of
/// `len` says the string holds escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sp {
    off: u32,
    len: u32,
}

const ESCAPED: u32 = 1 << 31;

impl Sp {
    fn of(line_start: usize, s: StrSpan) -> Option<Self> {
        let off = u32::try_from(s.start - line_start).ok()?;
        let len = u32::try_from(s.end - s.start)
            .ok()
            .filter(|l| l & ESCAPED == 0)?;
        Some(Self {
            off,
            len: if s.escaped { len | ESCAPED } else { len },
        })
    }

    fn of_value(line_start: usize, (start, end): (usize, usize)) -> Option<Self> {
        Self::of(
            line_start,
            StrSpan {
                start,
                end,
                escaped: false,
            },
        )
    }

    /// The span in buffer coordinates.
    pub(crate) fn abs(self, line_start: usize) -> StrSpan {
        let start = line_start + self.off as usize;
        StrSpan {
            start,
            end: start + (self.len & !ESCAPED) as usize,
            escaped: self.len & ESCAPED != 0,
        }
    }
}

/// The `subtype`s of `system` lines the loader acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SystemSub {
    /// `compact_boundary`: the live conversation starts after the last one.
    CompactBoundary,
    /// `local_command`: a slash command's output, which the model sees as a user message.
    LocalCommand,
    /// Any other subtype.
    Other,
}

/// A line's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
    /// `system`.
    System(SystemSub),
    /// `attachment`.
    Attachment,
    /// `progress`.
    Progress,
    /// A metadata line.
    Meta(EntryKind),
    /// An unknown `type`, or none.
    Unknown,
}

impl LineKind {
    /// Whether lines of this kind take part in the `parentUuid` chain.
    pub(crate) fn is_participant(self) -> bool {
        matches!(
            self,
            Self::User | Self::Assistant | Self::System(_) | Self::Attachment | Self::Progress
        )
    }
}

/// Flag bits of [`LineInfo::flags`].
pub(crate) mod flag {
    /// `isSidechain: true`.
    pub(crate) const SIDECHAIN: u8 = 1;
    /// `isMeta: true`.
    pub(crate) const META: u8 = 2;
    /// `isCompactSummary: true`.
    pub(crate) const COMPACT_SUMMARY: u8 = 4;
    /// `isApiErrorMessage: true`.
    pub(crate) const API_ERROR: u8 = 8;
    /// `message.model` is `<synthetic>`: not an API call.
    pub(crate) const SYNTHETIC: u8 = 16;
    /// The line's `message` is not a valid message (found when it was parsed).
    pub(crate) const BAD_BODY: u8 = 32;
}

/// Token counts of an assistant line, read without building a [`strata_protocol::message::Usage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct UsageCounts {
    pub(crate) input: u64,
    pub(crate) output: u64,
    pub(crate) cache_creation: Option<u64>,
    pub(crate) cache_read: u64,
    /// `cache_creation.ephemeral_5m_input_tokens` / `…_1h_…`, when the breakdown exists.
    pub(crate) breakdown: Option<(u64, u64)>,
}

impl UsageCounts {
    /// Every token counted, to pick the most complete record of a response.
    pub(crate) fn total(&self) -> u64 {
        self.input + self.output + self.cache_creation.unwrap_or(0) + self.cache_read
    }

    /// Cache writes with the 5-minute and 1-hour lifetimes.
    pub(crate) fn cache_writes(&self) -> (u64, u64) {
        self.breakdown
            .unwrap_or((self.cache_creation.unwrap_or(0), 0))
    }
}

/// A tool id a message issues or answers: its hash (for matching) and where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ToolId {
    pub(crate) hash: u64,
    pub(crate) sp: Sp,
}

/// The loader's record of one line.
///
/// String fields are spans relative to `start` in the store segment `seg` of the
/// transcript (or in the caller's buffer for a line scanned on its own). Ids are also
/// hashed while the line is being scanned (its bytes are in cache then), so the chain is
/// built from 8-byte keys instead of chasing strings all over a large file.
#[derive(Debug, Clone)]
pub(crate) struct LineInfo {
    /// Where this line's kept bytes start in its store segment.
    pub(crate) start: usize,
    /// The store segment.
    pub(crate) seg: u8,
    /// Whether the whole line is kept (at `start`, `len` bytes), not only its fields.
    pub(crate) whole: bool,
    /// Offset of the line in the file.
    pub(crate) file_offset: u64,
    /// Length of the line in the file (without its newline).
    pub(crate) len: u32,
    /// 1-based line number in the file.
    pub(crate) number: u32,
    pub(crate) kind: LineKind,
    pub(crate) flags: u8,
    /// [`id_hash`] of `uuid`, `parentUuid` and `message.id` (0: absent).
    pub(crate) uuid_h: u64,
    pub(crate) parent_h: u64,
    pub(crate) msg_h: u64,
    /// [`id_hash`] of `requestId` (0: absent).
    pub(crate) req_h: u64,
    pub(crate) uuid: Option<Sp>,
    pub(crate) parent: Option<Sp>,
    pub(crate) logical_parent: Option<Sp>,
    pub(crate) timestamp: Option<Sp>,
    /// The raw `message` value.
    pub(crate) message: Option<Sp>,
    /// `message.id`; on a file-history snapshot line, `snapshot.messageId`.
    pub(crate) msg_id: Option<Sp>,
    /// `message.model`.
    pub(crate) model: Option<Sp>,
    pub(crate) request_id: Option<Sp>,
    /// A user message's string content or first text block; a system line's `content`.
    pub(crate) text: Option<Sp>,
    pub(crate) permission_mode: Option<Sp>,
    pub(crate) session_id: Option<Sp>,
    pub(crate) cwd: Option<Sp>,
    /// Tool-use ids a message issues (`tool_use.id`) or answers (`tool_result.tool_use_id`).
    pub(crate) tool_ids: Box<[ToolId]>,
    pub(crate) usage: Option<Box<UsageCounts>>,
    /// A `user` or `assistant` line's message, parsed while the line was read for resume
    /// (its bytes are in cache then, and need not be kept); taken by the conversion.
    pub(crate) body: Option<Box<crate::model_messages::LiveItem>>,
}

/// A 64-bit hash of an id's bytes; never 0 (0 means "absent").
pub(crate) fn id_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher as _;
    let mut h = crate::chain::IdHasher::default();
    h.write(bytes);
    h.write_usize(bytes.len());
    h.finish().max(1)
}

/// What of a line the loader keeps once it is scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// The whole line (small transcripts, fork, metadata lines).
    Whole,
    /// Only the fields resume uses: ids, timestamps, flags, the message body of user and
    /// assistant lines; the rest (tool outputs, progress payloads) is dropped.
    Fields,
}

impl LineInfo {
    pub(crate) fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    /// A span's bytes (escaped form) within `buf` (the buffer the line was scanned in).
    pub(crate) fn raw<'b>(&self, buf: &'b [u8], sp: Sp) -> &'b [u8] {
        let s = sp.abs(self.start);
        &buf[s.start..s.end]
    }

    /// A string field decoded, within `buf` (the buffer the line was scanned in).
    pub(crate) fn text_of<'b>(
        &self,
        buf: &'b [u8],
        sp: Option<Sp>,
    ) -> Option<std::borrow::Cow<'b, str>> {
        super::scan::text(buf, sp?.abs(self.start))
    }

    /// Copies what `keep` asks for from `buf` (where the line was scanned) to the end of
    /// `store`, and points the line's spans there.
    pub(crate) fn move_into(&mut self, buf: &[u8], store: &mut Vec<u8>, keep: Keep) {
        let from = self.start;
        let base = store.len();
        let whole = keep == Keep::Whole || matches!(self.kind, LineKind::Meta(_));
        if whole {
            store.extend_from_slice(&buf[from..from + self.len as usize]);
            self.start = base;
            self.whole = true;
            return;
        }
        self.whole = false;
        self.session_id = None;
        let body = matches!(self.kind, LineKind::User | LineKind::Assistant);
        if !body {
            self.message = None;
        }
        if !matches!(self.kind, LineKind::System(_)) {
            self.text = None;
        }
        if self.kind != LineKind::User {
            self.permission_mode = None;
        }
        let mut copy = |sp: &mut Option<Sp>| {
            if let Some(s) = sp {
                let a = s.abs(from);
                s.off = u32::try_from(store.len() - base).unwrap_or(u32::MAX);
                store.extend_from_slice(&buf[a.start..a.end]);
            }
        };
        for sp in [
            &mut self.uuid,
            &mut self.parent,
            &mut self.logical_parent,
            &mut self.timestamp,
            &mut self.msg_id,
            &mut self.model,
            &mut self.request_id,
            &mut self.text,
            &mut self.permission_mode,
            &mut self.cwd,
            &mut self.message,
        ] {
            copy(sp);
        }
        for t in self.tool_ids.iter_mut() {
            let mut sp = Some(t.sp);
            copy(&mut sp);
            if let Some(sp) = sp {
                t.sp = sp;
            }
        }
        self.start = base;
    }
}

/// Scans `buf[start..end]` as one transcript line.
pub(crate) fn scan_line(buf: &[u8], start: usize, end: usize, number: u32) -> ScanResult<LineInfo> {
    super::scan::check_text(buf, start, end)?;
    let mut info = LineInfo {
        start,
        seg: 0,
        whole: true,
        file_offset: start as u64,
        uuid_h: 0,
        parent_h: 0,
        msg_h: 0,
        req_h: 0,
        len: u32::try_from(end - start).unwrap_or(u32::MAX),
        number,
        kind: LineKind::Unknown,
        flags: 0,
        uuid: None,
        parent: None,
        logical_parent: None,
        timestamp: None,
        message: None,
        msg_id: None,
        model: None,
        request_id: None,
        text: None,
        permission_mode: None,
        session_id: None,
        cwd: None,
        tool_ids: Box::new([]),
        usage: None,
        body: None,
    };
    let mut kind: Option<StrSpan> = None;
    let mut subtype: Option<StrSpan> = None;
    let mut content: Option<StrSpan> = None;
    let mut snapshot_of: Option<StrSpan> = None;
    let mut msg = MessageHead::default();
    let sp = |s: StrSpan| Sp::of(start, s);
    let mut sc = Scanner::new(buf, start, end);
    sc.object(|sc, key| {
        match &buf[key.start..key.end] {
            b"type" => kind = sc.string_or_null()?,
            b"subtype" => subtype = sc.string_or_null()?,
            b"uuid" => info.uuid = sc.string_or_null()?.and_then(sp),
            b"parentUuid" => info.parent = sc.string_or_null()?.and_then(sp),
            b"logicalParentUuid" => info.logical_parent = sc.string_or_null()?.and_then(sp),
            b"timestamp" => info.timestamp = sc.string_or_null()?.and_then(sp),
            b"requestId" => info.request_id = sc.string_or_null()?.and_then(sp),
            b"sessionId" => info.session_id = sc.string_or_null()?.and_then(sp),
            b"cwd" => info.cwd = sc.string_or_null()?.and_then(sp),
            b"permissionMode" => info.permission_mode = sc.string_or_null()?.and_then(sp),
            b"isSidechain" => set(&mut info.flags, flag::SIDECHAIN, sc.bool_lenient()?),
            b"isMeta" => set(&mut info.flags, flag::META, sc.bool_lenient()?),
            b"isCompactSummary" => set(&mut info.flags, flag::COMPACT_SUMMARY, sc.bool_lenient()?),
            b"isApiErrorMessage" => set(&mut info.flags, flag::API_ERROR, sc.bool_lenient()?),
            b"content" => match sc.peek_value() {
                Some(b'"') => content = Some(sc.string()?),
                _ => sc.skip_value()?,
            },
            b"snapshot" => match sc.peek_value() {
                // A file-history snapshot names the user message it belongs to.
                Some(b'{') => sc.object(|sc, key| {
                    match &buf[key.start..key.end] {
                        b"messageId" => snapshot_of = sc.string_or_null()?,
                        _ => sc.skip_value()?,
                    }
                    Ok(())
                })?,
                _ => sc.skip_value()?,
            },
            b"message" => match sc.peek_value() {
                Some(b'{') => {
                    let from = sc.pos();
                    msg.scan(buf, sc)?;
                    info.message = Sp::of_value(start, (from, sc.pos()));
                }
                _ => sc.skip_value()?,
            },
            _ => sc.skip_value()?,
        }
        Ok(())
    })?;
    sc.finish()?;

    info.kind = match kind.map(|k| &buf[k.start..k.end]) {
        Some(b"user") => LineKind::User,
        Some(b"assistant") => LineKind::Assistant,
        Some(b"system") => LineKind::System(match subtype.map(|s| &buf[s.start..s.end]) {
            Some(b"compact_boundary") => SystemSub::CompactBoundary,
            Some(b"local_command") => SystemSub::LocalCommand,
            _ => SystemSub::Other,
        }),
        Some(b"attachment") => LineKind::Attachment,
        Some(b"progress") => LineKind::Progress,
        Some(other) => std::str::from_utf8(other)
            .ok()
            .and_then(EntryKind::parse)
            .map_or(LineKind::Unknown, LineKind::Meta),
        None => LineKind::Unknown,
    };
    if info.message.is_some() {
        info.msg_id = msg.id.and_then(sp);
        info.model = msg.model.and_then(sp);
        info.text = msg.text.and_then(sp);
        if !msg.tool_ids.is_empty() {
            info.tool_ids = msg
                .tool_ids
                .into_iter()
                .filter_map(|t| {
                    Some(ToolId {
                        hash: id_hash(&buf[t.start..t.end]),
                        sp: sp(t)?,
                    })
                })
                .collect();
        }
        info.usage = msg.usage.map(Box::new);
    }
    if matches!(info.kind, LineKind::System(_)) {
        info.text = content.and_then(sp);
    }
    if info.kind == LineKind::Meta(EntryKind::FileHistorySnapshot) {
        // Snapshot lines carry no message: `msg_id` holds the user message they belong to.
        info.msg_id = snapshot_of.and_then(sp);
    }
    let hash = |s: Option<Sp>| {
        s.map_or(0, |s| {
            let a = s.abs(start);
            id_hash(&buf[a.start..a.end])
        })
    };
    info.uuid_h = hash(info.uuid);
    info.parent_h = hash(info.parent);
    info.msg_h = hash(info.msg_id);
    info.req_h = hash(info.request_id);
    if info.model.is_some_and(|m| {
        let a = m.abs(start);
        &buf[a.start..a.end] == strata_protocol::message::SYNTHETIC_MODEL.as_bytes()
    }) {
        info.flags |= flag::SYNTHETIC;
    }
    Ok(info)
}

fn set(flags: &mut u8, f: u8, v: Option<bool>) {
    if v == Some(true) {
        *flags |= f;
    }
}

/// The parts of a `message` object the loader needs.
#[derive(Default)]
struct MessageHead {
    id: Option<StrSpan>,
    model: Option<StrSpan>,
    text: Option<StrSpan>,
    tool_ids: Vec<StrSpan>,
    usage: Option<UsageCounts>,
}

impl MessageHead {
    fn scan(&mut self, buf: &[u8], sc: &mut Scanner<'_>) -> ScanResult<()> {
        sc.object(|sc, key| {
            match &buf[key.start..key.end] {
                b"id" => self.id = sc.string_or_null()?,
                b"model" => self.model = sc.string_or_null()?,
                b"content" => match sc.peek_value() {
                    Some(b'"') => self.text = Some(sc.string()?),
                    Some(b'[') => sc.array(|sc| self.block(buf, sc))?,
                    _ => sc.skip_value()?,
                },
                b"usage" => match sc.peek_value() {
                    Some(b'{') => self.usage = Some(scan_usage(buf, sc)?),
                    _ => sc.skip_value()?,
                },
                _ => sc.skip_value()?,
            }
            Ok(())
        })
    }

    fn block(&mut self, buf: &[u8], sc: &mut Scanner<'_>) -> ScanResult<()> {
        if sc.peek_value() != Some(b'{') {
            return sc.skip_value();
        }
        let (mut ty, mut id, mut answered, mut text) = (None, None, None, None);
        sc.object(|sc, key| {
            match &buf[key.start..key.end] {
                b"type" => ty = sc.string_or_null()?,
                b"id" => id = sc.string_or_null()?,
                b"tool_use_id" => answered = sc.string_or_null()?,
                b"text" => match sc.peek_value() {
                    Some(b'"') => text = Some(sc.string()?),
                    _ => sc.skip_value()?,
                },
                _ => sc.skip_value()?,
            }
            Ok(())
        })?;
        match ty.map(|t| &buf[t.start..t.end]) {
            Some(b"tool_use") => self.tool_ids.extend(id),
            Some(b"tool_result") => self.tool_ids.extend(answered),
            Some(b"text") if self.text.is_none() => self.text = text,
            _ => {}
        }
        Ok(())
    }
}

fn scan_usage(buf: &[u8], sc: &mut Scanner<'_>) -> ScanResult<UsageCounts> {
    let mut u = UsageCounts::default();
    sc.object(|sc, key| {
        match &buf[key.start..key.end] {
            b"input_tokens" => u.input = sc.u64_lenient()?.unwrap_or(0),
            b"output_tokens" => u.output = sc.u64_lenient()?.unwrap_or(0),
            b"cache_creation_input_tokens" => u.cache_creation = sc.u64_lenient()?,
            b"cache_read_input_tokens" => u.cache_read = sc.u64_lenient()?.unwrap_or(0),
            b"cache_creation" if sc.peek_value() == Some(b'{') => {
                let (mut m5, mut h1) = (0, 0);
                sc.object(|sc, key| {
                    match &buf[key.start..key.end] {
                        b"ephemeral_5m_input_tokens" => m5 = sc.u64_lenient()?.unwrap_or(0),
                        b"ephemeral_1h_input_tokens" => h1 = sc.u64_lenient()?.unwrap_or(0),
                        _ => sc.skip_value()?,
                    }
                    Ok(())
                })?;
                u.breakdown = Some((m5, h1));
            }
            _ => sc.skip_value()?,
        }
        Ok(())
    })?;
    Ok(u)
}

/// What the first keys of a line say, before its first large value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Head {
    /// `type` came first: its value's span in the buffer.
    Type(StrSpan),
    /// `message` came before `type`: an assistant line in the reference key order (user
    /// lines put `type` first).
    MessageFirst,
    /// Neither was found before another large value, or the line is not an object.
    Unknown,
}

/// Reads a line's keys up to `type` or its first large value (`message`, `data`,
/// `toolUseResult`, `snapshot`), without scanning the rest. Returns what was found and
/// whether `isSidechain: true` came first.
pub(crate) fn scan_head(buf: &[u8], start: usize, end: usize) -> (Head, bool) {
    const STOP: &str = "head read";
    let mut head = Head::Unknown;
    let mut sidechain = false;
    let mut sc = Scanner::new(buf, start, end);
    let stop = |sc: &Scanner<'_>| {
        Err(super::scan::ScanError {
            at: sc.pos(),
            what: STOP,
        })
    };
    let _ = sc.object(|sc, key| match &buf[key.start..key.end] {
        b"type" => {
            if let Some(t) = sc.string_or_null()? {
                head = Head::Type(t);
            }
            stop(sc)
        }
        b"isSidechain" => {
            sidechain = sc.bool_lenient()? == Some(true);
            Ok(())
        }
        b"message" => {
            head = Head::MessageFirst;
            stop(sc)
        }
        b"data" | b"toolUseResult" | b"snapshot" => stop(sc),
        _ => sc.skip_value(),
    });
    (head, sidechain)
}
