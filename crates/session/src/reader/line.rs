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

/// The loader's record of one line.
#[derive(Debug, Clone)]
pub(crate) struct LineInfo {
    /// Offset of the line in the buffer.
    pub(crate) start: usize,
    /// Length of the line (without its newline).
    pub(crate) len: u32,
    /// 1-based line number in the file.
    pub(crate) number: u32,
    pub(crate) kind: LineKind,
    pub(crate) flags: u8,
    pub(crate) uuid: Option<Sp>,
    pub(crate) parent: Option<Sp>,
    pub(crate) logical_parent: Option<Sp>,
    pub(crate) timestamp: Option<Sp>,
    /// The raw `message` value.
    pub(crate) message: Option<Sp>,
    /// `message.id`.
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
    pub(crate) tool_ids: Box<[Sp]>,
    pub(crate) usage: Option<Box<UsageCounts>>,
}

impl LineInfo {
    pub(crate) fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    /// The line's bytes within `buf`.
    pub(crate) fn bytes<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        &buf[self.start..self.start + self.len as usize]
    }

    /// A span's bytes (escaped form) within `buf`.
    pub(crate) fn raw<'b>(&self, buf: &'b [u8], sp: Sp) -> &'b [u8] {
        let s = sp.abs(self.start);
        &buf[s.start..s.end]
    }

    /// A string field decoded.
    pub(crate) fn text_of<'b>(
        &self,
        buf: &'b [u8],
        sp: Option<Sp>,
    ) -> Option<std::borrow::Cow<'b, str>> {
        super::scan::text(buf, sp?.abs(self.start))
    }
}

/// Scans `buf[start..end]` as one transcript line.
pub(crate) fn scan_line(buf: &[u8], start: usize, end: usize, number: u32) -> ScanResult<LineInfo> {
    let mut info = LineInfo {
        start,
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
    };
    let mut kind: Option<StrSpan> = None;
    let mut subtype: Option<StrSpan> = None;
    let mut content: Option<StrSpan> = None;
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
            info.tool_ids = msg.tool_ids.into_iter().filter_map(sp).collect();
        }
        info.usage = msg.usage.map(Box::new);
    }
    if matches!(info.kind, LineKind::System(_)) {
        info.text = content.and_then(sp);
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
