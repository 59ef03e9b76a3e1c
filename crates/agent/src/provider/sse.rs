//! A small incremental parser for server-sent events (the `text/event-stream` format both
//! model APIs stream in).
//!
//! Written here rather than taken from a crate because the providers need exactly the
//! parsing step, fed with whatever byte chunks the HTTP body yields, and nothing else (no
//! reconnection, no `Last-Event-ID` bookkeeping); a push parser over `&[u8]` is easy to
//! prove with a property test: any split of the byte stream into chunks gives the same
//! events.
//!
//! The rules follow the WHATWG "event stream interpretation": lines end in CRLF, LF or a
//! lone CR (a CR at the end of one chunk and an LF at the start of the next are one line
//! end); lines starting with `:` are comments; `field: value` drops one space after the
//! colon; several `data:` lines join with `\n`; a blank line dispatches the event, and an
//! event with no `data` line is not dispatched; a leading byte-order mark is ignored.
//! Lines are decoded as UTF-8 only once complete, so a character split across chunks is
//! never damaged (invalid UTF-8 becomes U+FFFD).
//!
//! One deliberate leniency: at the end of the stream, an event whose lines were all
//! complete but that was not followed by a blank line is still dispatched (some local
//! servers close the connection right after `data: [DONE]\n`). A final line cut off
//! without a line end is dropped.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; `None` when absent (the default type, `message`).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The `id:` field of this event, if it had one.
    pub id: Option<String>,
}

/// An incremental SSE parser: feed byte chunks, collect events.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being read (not yet ended).
    line: Vec<u8>,
    /// The previous chunk ended in CR: an LF first in the next chunk belongs to it.
    after_cr: bool,
    /// Whether the start of the stream (and its optional byte-order mark) was handled.
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `chunk` and appends every event it completes to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) {
        if !self.started {
            // The BOM may itself arrive split; wait until three bytes are there to decide.
            let mut head = std::mem::take(&mut self.line);
            head.extend_from_slice(chunk);
            if head.len() < 3 && b"\xEF\xBB\xBF".starts_with(&head) {
                self.line = head;
                return;
            }
            self.started = true;
            let rest = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&head).to_vec();
            return self.feed(&rest, out);
        }
        if chunk.is_empty() {
            // Keep `after_cr` for the next chunk that has bytes.
            return;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&chunk[..end]);
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out);
            // Reuse the allocation for the next line.
            self.line = line;
            self.line.clear();
            let crlf = chunk[end] == b'\r';
            chunk = &chunk[end + 1..];
            if crlf {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.line.extend_from_slice(chunk);
    }

    /// Ends the stream: dispatches an event whose lines were complete but that no blank
    /// line closed (see the module docs), and drops an unterminated last line.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        self.line.clear();
        self.dispatch(out);
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" if !value.contains(&0) => {
                self.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            // `retry` tunes reconnection, which the providers do not do; unknown fields
            // are ignored as the standard says.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        let id = self.id.take();
        if !self.has_data {
            self.data.clear();
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id,
        });
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out);
        }
        p.finish(&mut out);
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
            id: None,
        }
    }

    #[test]
    fn anthropic_style_events_with_names_and_json_data() {
        let input = b"event: message_start\ndata: {\"type\":\"message_start\"}\n\n\
                      event: ping\ndata: {\"type\": \"ping\"}\n\n";
        assert_eq!(
            parse_all(&[input]),
            vec![
                ev(Some("message_start"), "{\"type\":\"message_start\"}"),
                ev(Some("ping"), "{\"type\": \"ping\"}"),
            ]
        );
    }

    #[test]
    fn multi_line_data_joins_with_newlines_and_comments_are_skipped() {
        let input = b": keep-alive comment\ndata: first\ndata:second\ndata:  third\n\n";
        assert_eq!(parse_all(&[input]), vec![ev(None, "first\nsecond\n third")]);
    }

    #[test]
    fn crlf_and_lone_cr_line_ends() {
        let input = b"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r";
        assert_eq!(
            parse_all(&[input]),
            vec![ev(Some("a"), "1"), ev(Some("b"), "2")]
        );
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        // "data: x\r" | "\n\r\n": if the LF were a second line end, the blank line would
        // come too early and the event would still be right, so also check the event
        // after it is not cut off by a phantom blank line.
        let out = parse_all(&[b"data: x\r", b"\ndata: y\r", b"\n\r\n"]);
        assert_eq!(out, vec![ev(None, "x\ny")]);
    }

    #[test]
    fn empty_chunk_between_cr_and_lf_does_not_split_the_line_end() {
        // Regression (found by the chunking property): an empty read between the CR and
        // the LF of one CRLF made the LF a blank line, which dropped the event's name.
        let out = parse_all(&[b"event: e\r", b"", b"\ndata: d\r\n\r\n"]);
        assert_eq!(out, vec![ev(Some("e"), "d")]);
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        assert_eq!(
            parse_all(&[b"event: ping\n\ndata: d\n\n"]),
            vec![ev(None, "d")]
        );
    }

    #[test]
    fn field_without_colon_and_empty_data() {
        // `data` alone is a data line with an empty value.
        assert_eq!(parse_all(&[b"data\n\n"]), vec![ev(None, "")]);
        assert_eq!(parse_all(&[b"data\ndata\n\n"]), vec![ev(None, "\n")]);
    }

    #[test]
    fn id_field_is_reported_with_its_event() {
        let out = parse_all(&[b"id: 7\ndata: d\n\n"]);
        assert_eq!(out[0].id.as_deref(), Some("7"));
    }

    #[test]
    fn byte_order_mark_is_ignored_even_when_split() {
        assert_eq!(
            parse_all(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]),
            vec![ev(None, "x")]
        );
        // A stream shorter than a BOM still parses.
        assert_eq!(parse_all(&[b"da", b"ta: y\n\n"]), vec![ev(None, "y")]);
    }

    #[test]
    fn utf8_split_inside_a_character_survives() {
        let text = "data: héllo ✓\n\n".as_bytes();
        let (a, b) = text.split_at(9); // inside "é"
        assert_eq!(parse_all(&[a, b]), vec![ev(None, "héllo ✓")]);
    }

    #[test]
    fn complete_event_without_trailing_blank_line_is_dispatched_at_end() {
        assert_eq!(parse_all(&[b"data: [DONE]\n"]), vec![ev(None, "[DONE]")]);
        // An unterminated last line is a cut-off stream: dropped.
        assert_eq!(parse_all(&[b"data: {\"partial"]), vec![]);
    }

    /// One event as a generator builds it, and how it writes it.
    #[derive(Debug, Clone)]
    struct Gen {
        event: Option<String>,
        data: Vec<String>,
        comment: bool,
    }

    fn line_end() -> impl Strategy<Value = &'static str> {
        prop_oneof![Just("\n"), Just("\r\n"), Just("\r")]
    }

    fn gen_event() -> impl Strategy<Value = Gen> {
        (
            proptest::option::of("[a-z_]{1,12}"),
            proptest::collection::vec("[ -~é✓]{0,20}", 1..4),
            any::<bool>(),
        )
            .prop_map(|(event, data, comment)| Gen {
                event,
                data,
                comment,
            })
    }

    proptest! {
        /// Any split of the byte stream into chunks yields the same events, and they are
        /// the events that were written.
        #[test]
        fn any_chunking_yields_the_written_events(
            events in proptest::collection::vec(gen_event(), 0..8),
            ends in proptest::collection::vec(line_end(), 64),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let mut bytes = Vec::new();
            let mut ends = ends.iter().cycle();
            let mut last_end = "";
            // Writes a line end; a CR end followed by an LF end would read as one CRLF, so
            // the second becomes a CRLF of its own.
            let mut end_line = |bytes: &mut Vec<u8>| {
                let mut end = *ends.next().unwrap_or(&"\n");
                if last_end == "\r" && end == "\n" {
                    end = "\r\n";
                }
                last_end = end;
                bytes.extend_from_slice(end.as_bytes());
            };
            let mut expected = Vec::new();
            for g in &events {
                if g.comment {
                    bytes.extend_from_slice(b": comment");
                    end_line(&mut bytes);
                }
                if let Some(name) = &g.event {
                    bytes.extend_from_slice(format!("event: {name}").as_bytes());
                    end_line(&mut bytes);
                }
                for d in &g.data {
                    bytes.extend_from_slice(format!("data: {d}").as_bytes());
                    end_line(&mut bytes);
                }
                end_line(&mut bytes);
                // A data value written as "data: x" loses exactly one leading space.
                expected.push(ev(g.event.as_deref(), &g.data.join("\n")));
            }
            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut at = 0;
            for p in points {
                chunks.push(&bytes[at..p]);
                at = p;
            }
            chunks.push(&bytes[at..]);
            prop_assert_eq!(parse_all(&chunks), expected.clone());
            prop_assert_eq!(parse_all(&[&bytes]), expected);
        }
    }
}
