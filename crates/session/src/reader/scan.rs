//! A structural JSON scanner: walks objects and arrays, finds where every value starts
//! and ends, and decodes nothing it is not asked for.
//!
//! Why not serde: resuming must read every line of a transcript that can be hundreds of
//! megabytes, but needs only a dozen small fields per line (ids, type, timestamp, a few
//! flags); the bulk (tool outputs, file contents, progress payloads) only has to be
//! skipped. serde_json skips at roughly half the speed of this scanner because it
//! validates and dispatches on every byte; here a string is skipped by jumping from one
//! quote or backslash to the next with `memchr`. The scanner still checks the structure
//! (balanced brackets, commas, colons, literals, escapes), so a torn line is rejected,
//! and message bodies that are actually used are parsed by serde later, fully checked.

use memchr::memchr2;

/// The deepest nesting accepted; deeper input is rejected rather than risking the stack.
const MAX_DEPTH: u32 = 128;

/// Why a line is not JSON, and where (a byte offset into the buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScanError {
    /// Byte offset of the problem in the scanned buffer.
    pub(crate) at: usize,
    /// What is wrong.
    pub(crate) what: &'static str,
}

/// A string value: the bytes between its quotes, and whether they contain escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct StrSpan {
    /// Offset of the first byte after the opening quote.
    pub(crate) start: usize,
    /// Offset of the closing quote.
    pub(crate) end: usize,
    /// Whether the contents hold backslash escapes (and so must be decoded to be read).
    pub(crate) escaped: bool,
}

pub(crate) type ScanResult<T> = Result<T, ScanError>;

/// A cursor over `buf[pos..end]`.
pub(crate) struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
    depth: u32,
}

impl<'a> Scanner<'a> {
    /// A scanner over `buf[start..end]`.
    pub(crate) fn new(buf: &'a [u8], start: usize, end: usize) -> Self {
        Self {
            buf,
            pos: start,
            end: end.min(buf.len()),
            depth: 0,
        }
    }

    /// The current offset.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    fn err<T>(&self, what: &'static str) -> ScanResult<T> {
        Err(ScanError { at: self.pos, what })
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        if self.pos < self.end {
            Some(self.buf[self.pos])
        } else {
            None
        }
    }

    #[inline]
    pub(crate) fn skip_ws(&mut self) {
        while self.pos < self.end {
            match self.buf[self.pos] {
                b' ' | b'\t' | b'\r' | b'\n' => self.pos += 1,
                _ => break,
            }
        }
    }

    /// Checks that only whitespace is left.
    pub(crate) fn finish(&mut self) -> ScanResult<()> {
        self.skip_ws();
        if self.pos == self.end {
            Ok(())
        } else {
            self.err("unexpected data after the JSON value")
        }
    }

    /// The next non-whitespace byte, without consuming it.
    pub(crate) fn peek_value(&mut self) -> Option<u8> {
        self.skip_ws();
        self.peek()
    }

    /// Reads a string (the cursor must be at its opening quote, after whitespace).
    #[inline]
    pub(crate) fn string(&mut self) -> ScanResult<StrSpan> {
        self.skip_ws();
        if self.peek() != Some(b'"') {
            return self.err("expected a string");
        }
        let start = self.pos + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            let Some(j) = find_quote_or_backslash(self.buf, i, self.end) else {
                self.pos = self.end;
                return self.err("unterminated string");
            };
            if self.buf[j] == b'"' {
                self.pos = j + 1;
                return Ok(StrSpan {
                    start,
                    end: j,
                    escaped,
                });
            }
            escaped = true;
            match self.buf.get(j + 1).filter(|_| j + 1 < self.end) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i = j + 2,
                Some(b'u') => {
                    let hex = self.buf.get(j + 2..j + 6).filter(|_| j + 6 <= self.end);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        self.pos = j;
                        return self.err("invalid \\u escape");
                    }
                    i = j + 6;
                }
                _ => {
                    self.pos = j;
                    return self.err("invalid escape");
                }
            }
        }
    }

    /// Reads a string or `null`.
    pub(crate) fn string_or_null(&mut self) -> ScanResult<Option<StrSpan>> {
        match self.peek_value() {
            Some(b'n') => self.literal(b"null").map(|()| None),
            _ => self.string().map(Some),
        }
    }

    /// Reads `true`, `false` or `null` (as `None`); any other value is skipped as `None`.
    pub(crate) fn bool_lenient(&mut self) -> ScanResult<Option<bool>> {
        match self.peek_value() {
            Some(b't') => self.literal(b"true").map(|()| Some(true)),
            Some(b'f') => self.literal(b"false").map(|()| Some(false)),
            _ => self.skip_value().map(|()| None),
        }
    }

    /// Reads a non-negative integer; any other value is skipped as `None`.
    pub(crate) fn u64_lenient(&mut self) -> ScanResult<Option<u64>> {
        self.skip_ws();
        let start = self.pos;
        let mut n: u64 = 0;
        let mut ok = true;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            n = match n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(c - b'0')))
            {
                Some(n) => n,
                None => {
                    ok = false;
                    n
                }
            };
            self.pos += 1;
        }
        if self.pos > start && !matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return Ok(ok.then_some(n));
        }
        self.pos = start;
        self.skip_value().map(|()| None)
    }

    fn literal(&mut self, word: &'static [u8]) -> ScanResult<()> {
        if self.buf.get(self.pos..self.pos + word.len()) == Some(word)
            && self.pos + word.len() <= self.end
        {
            self.pos += word.len();
            Ok(())
        } else {
            self.err("invalid literal")
        }
    }

    fn number(&mut self) -> ScanResult<()> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let digits = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        if self.pos == digits {
            self.pos = start;
            return self.err("invalid number");
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            let frac = self.pos;
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
            if self.pos == frac {
                return self.err("invalid number");
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            let exp = self.pos;
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
            if self.pos == exp {
                return self.err("invalid number");
            }
        }
        Ok(())
    }

    /// Skips one value of any kind, checking its grammar.
    ///
    /// Most of a transcript's bytes are in values nobody reads (tool outputs, progress
    /// payloads), so this is the hottest loop of a resume: it walks nested values with an
    /// explicit stack (one bit per level: object or array) instead of recursion and
    /// callbacks.
    pub(crate) fn skip_value(&mut self) -> ScanResult<()> {
        let mut objects: u128 = 0;
        let mut depth: u32 = 0;
        loop {
            // A value is expected here.
            match self.peek_value() {
                Some(b'"') => {
                    self.string()?;
                }
                Some(open @ (b'{' | b'[')) => {
                    self.pos += 1;
                    let close = if open == b'{' { b'}' } else { b']' };
                    if self.peek_value() == Some(close) {
                        self.pos += 1;
                    } else {
                        if depth + self.depth >= MAX_DEPTH {
                            return self.err("nested too deeply");
                        }
                        objects = (objects << 1) | u128::from(open == b'{');
                        depth += 1;
                        if open == b'{' {
                            self.key_and_colon()?;
                        }
                        continue;
                    }
                }
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(_) => return self.err("expected a JSON value"),
                None => return self.err("unexpected end of line"),
            }
            // A value ended: close the containers it ends, or move to the next element.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                let in_object = objects & 1 == 1;
                match self.peek_value() {
                    Some(b',') => {
                        self.pos += 1;
                        if in_object {
                            self.key_and_colon()?;
                        }
                        break;
                    }
                    Some(b'}') if in_object => {}
                    Some(b']') if !in_object => {}
                    _ => {
                        return self.err(if in_object {
                            "expected ',' or '}' in an object"
                        } else {
                            "expected ',' or ']' in an array"
                        });
                    }
                }
                self.pos += 1;
                objects >>= 1;
                depth -= 1;
            }
        }
    }

    /// Reads an object key and the colon after it.
    fn key_and_colon(&mut self) -> ScanResult<()> {
        self.string()?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            return self.err("expected ':' after a key");
        }
        self.pos += 1;
        Ok(())
    }

    /// Walks an object: `field` is called with each key and must consume its value.
    pub(crate) fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, StrSpan) -> ScanResult<()>,
    ) -> ScanResult<()> {
        if self.peek_value() != Some(b'{') {
            return self.err("expected an object");
        }
        self.enter()?;
        self.pos += 1;
        if self.peek_value() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return self.err("expected ':' after a key");
            }
            self.pos += 1;
            field(self, key)?;
            match self.peek_value() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or '}' in an object"),
            }
        }
    }

    /// Walks an array: `element` is called for each element and must consume it.
    pub(crate) fn array(
        &mut self,
        mut element: impl FnMut(&mut Self) -> ScanResult<()>,
    ) -> ScanResult<()> {
        if self.peek_value() != Some(b'[') {
            return self.err("expected an array");
        }
        self.enter()?;
        self.pos += 1;
        if self.peek_value() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            element(self)?;
            match self.peek_value() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or ']' in an array"),
            }
        }
    }

    fn enter(&mut self) -> ScanResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.err("nested too deeply")
        } else {
            Ok(())
        }
    }
}

/// The first `"` or `\` in `buf[from..end]`.
///
/// Strings are mostly short (keys, ids) or long but dense with escapes (code and file
/// contents are full of `\n` and `\"`), so each call usually ends within a few dozen
/// bytes: the first 64 bytes are checked eight at a time with word arithmetic (SWAR),
/// and only a longer run is handed to SIMD `memchr2`, whose call overhead pays off there.
#[inline]
fn find_quote_or_backslash(buf: &[u8], from: usize, end: usize) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const QUOTE: u64 = LO * b'"' as u64;
    const BACKSLASH: u64 = LO * b'\\' as u64;
    let swar_end = (from + 64).min(end);
    let mut i = from;
    for chunk in buf[from..swar_end].chunks_exact(8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        let w = u64::from_le_bytes(bytes);
        let (q, b) = (w ^ QUOTE, w ^ BACKSLASH);
        // A byte of `q` or `b` is zero where `w` holds a quote or a backslash; the lowest
        // flagged byte is exact (false flags can only appear above a true one).
        let found = ((q.wrapping_sub(LO) & !q) | (b.wrapping_sub(LO) & !b)) & HI;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    while i < swar_end {
        if matches!(buf[i], b'"' | b'\\') {
            return Some(i);
        }
        i += 1;
    }
    if i >= end {
        return None;
    }
    memchr2(b'"', b'\\', &buf[i..end]).map(|k| i + k)
}

/// Checks what the structural walk leaves out, on the whole line `buf[start..end]`: the
/// text is UTF-8, and no string holds a raw control character (JSON requires them
/// escaped). Either would make the line fail later, when serde reads its body — after
/// the line had been counted as good, and with serde's line number (always 1) instead of
/// the file's. Both checks run over the bytes at memory speed: the control-byte test is
/// written so the compiler vectorizes it, and the exact position is only looked for in
/// the rare line that has such a byte (raw tabs between tokens are valid and pass).
pub(crate) fn check_text(buf: &[u8], start: usize, end: usize) -> ScanResult<()> {
    let line = &buf[start..end];
    if let Err(e) = std::str::from_utf8(line) {
        return Err(ScanError {
            at: start + e.valid_up_to(),
            what: "invalid UTF-8",
        });
    }
    if !has_control_byte(line) {
        return Ok(());
    }
    match control_in_string(line) {
        Some(k) => Err(ScanError {
            at: start + k,
            what: "raw control character in a string (it must be escaped, as \\u00XX)",
        }),
        None => Ok(()),
    }
}

/// Whether any byte of `bytes` is below 0x20 (branch-free per chunk, so it vectorizes).
fn has_control_byte(bytes: &[u8]) -> bool {
    bytes
        .chunks(64)
        .any(|c| c.iter().fold(0u8, |acc, &b| acc | u8::from(b < 0x20)) != 0)
}

/// The offset of the first byte below 0x20 inside a string of `line`, if any.
fn control_in_string(line: &[u8]) -> Option<usize> {
    let mut in_string = false;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'\\' if in_string => i += 1, // the escaped byte is not a quote
            b'"' => in_string = !in_string,
            b if b < 0x20 && in_string => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The bytes of a string span (still escaped when `span.escaped`).
pub(crate) fn raw(buf: &[u8], span: StrSpan) -> &[u8] {
    &buf[span.start..span.end]
}

/// Decodes a string span to text: borrowed when it has no escapes and is valid UTF-8,
/// decoded by serde_json otherwise; `None` when it is not valid text.
pub(crate) fn text(buf: &[u8], span: StrSpan) -> Option<std::borrow::Cow<'_, str>> {
    if !span.escaped {
        return std::str::from_utf8(raw(buf, span))
            .ok()
            .map(std::borrow::Cow::Borrowed);
    }
    // Quote it so serde_json reads it as one JSON string (the bytes around the span are
    // not necessarily its quotes: kept fields are stored without them).
    let inner = buf.get(span.start..span.end)?;
    let mut quoted = Vec::with_capacity(inner.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(inner);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted)
        .ok()
        .map(std::borrow::Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skim(s: &str) -> ScanResult<()> {
        let mut sc = Scanner::new(s.as_bytes(), 0, s.len());
        sc.skip_value()?;
        sc.finish()
    }

    #[test]
    fn accepts_what_serde_json_accepts() {
        for s in [
            r#"{}"#,
            r#"{"a":[1,-2.5e3,true,false,null,"x\"y\\z\u00e9"],"b":{"c":{}}}"#,
            r#" { "a" : [ ] , "b" : "" } "#,
            r#""a long string with no escapes at all that runs well past forty bytes of text""#,
            r#""long with an escape far in: ......................................\n...""#,
        ] {
            assert!(serde_json::from_str::<serde_json::Value>(s).is_ok(), "{s}");
            assert_eq!(skim(s), Ok(()), "{s}");
        }
    }

    #[test]
    fn rejects_torn_and_broken_json() {
        for s in [
            r#"{"a":1"#,
            r#"{"a":"unterminated"#,
            r#"{"a":1}}"#,
            r#"{"a" 1}"#,
            r#"{"a":tru}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12"}"#,
            r#"[1,]"#,
            r#"{"a":-}"#,
            r#"{"a":1.}"#,
            "",
        ] {
            assert!(skim(s).is_err(), "{s}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let s = "[".repeat(10_000) + &"]".repeat(10_000);
        assert_eq!(skim(&s).unwrap_err().what, "nested too deeply");
    }

    #[test]
    fn strings_decode_with_and_without_escapes() {
        let s = r#"["plain","esc\"aped\n"]"#;
        let mut sc = Scanner::new(s.as_bytes(), 0, s.len());
        let mut spans = Vec::new();
        sc.array(|sc| {
            spans.push(sc.string()?);
            Ok(())
        })
        .unwrap();
        assert_eq!(text(s.as_bytes(), spans[0]).unwrap(), "plain");
        assert!(spans[1].escaped);
        assert_eq!(text(s.as_bytes(), spans[1]).unwrap(), "esc\"aped\n");
    }

    #[test]
    fn integers_are_read_and_other_numbers_skipped() {
        let s = r#"[12,1.5,"x",18446744073709551616]"#;
        let mut sc = Scanner::new(s.as_bytes(), 0, s.len());
        let mut got = Vec::new();
        sc.array(|sc| {
            got.push(sc.u64_lenient()?);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, [Some(12), None, None, None]);
    }

    mod properties {
        use proptest::prelude::*;
        use serde_json::Value;

        use super::*;

        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(Value::from),
                ".*".prop_map(Value::String),
                "[\"\\\\/\u{0}-\u{1f}a-z\u{e9}\u{1F600}]{0,60}".prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 64, 8, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                    prop::collection::vec((".{0,12}", inner), 0..8)
                        .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// The scanner accepts every document serde_json writes, and reads its strings
            /// back to the same text.
            #[test]
            fn the_scanner_accepts_all_json_and_decodes_strings(v in json(), pretty in any::<bool>()) {
                let text = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }.unwrap();
                prop_assert_eq!(skim(&text), Ok(()));
                if let Value::String(expected) = &v {
                    let mut sc = Scanner::new(text.as_bytes(), 0, text.len());
                    let span = sc.string().unwrap();
                    let decoded = super::super::text(text.as_bytes(), span).unwrap();
                    prop_assert_eq!(decoded.as_ref(), expected.as_str());
                }
            }

            /// Cutting a document anywhere inside makes it invalid (a torn line is never
            /// taken for a record).
            #[test]
            fn a_cut_document_is_rejected(v in json(), cut in any::<prop::sample::Index>()) {
                let text = serde_json::to_string(&v).unwrap();
                prop_assume!(matches!(v, Value::Object(_) | Value::Array(_)));
                let at = cut.index(text.len());
                let torn = &text.as_bytes()[..at];
                let mut sc = Scanner::new(torn, 0, torn.len());
                prop_assert!(sc.skip_value().and_then(|()| sc.finish()).is_err());
            }
        }
    }
}
