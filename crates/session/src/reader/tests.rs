//! Reading: malformed lines, torn and fused lines, parallel scanning.

use super::*;
use line::LineKind;

#[test]
fn malformed_lines_are_counted_with_line_and_column() {
    let text = b"{\"type\":\"summary\",\"summary\":\"a\"}\n\n{\"type\":\n   \n{\"type\":\"tag\",\"tag\":\"x\"}\r\n";
    let t = Transcript::from_bytes(text.to_vec());
    assert_eq!(t.entry_count(), 2);
    assert_eq!(t.malformed().len(), 1);
    let m = &t.malformed()[0];
    assert_eq!(
        (m.line, m.column, m.recovered_record, m.torn_tail),
        (3, 9, false, false)
    );
    assert_eq!(t.lines[1].number, 5);
    assert_eq!(
        t.lines[1].kind,
        LineKind::Meta(strata_protocol::transcript::EntryKind::Tag)
    );
}

#[test]
fn a_fused_line_gives_back_its_whole_record() {
    let text = b"{\"type\":\"user\",\"uuid\":\"a\",\"mess{\"type\":\"tag\",\"tag\":\"kept\"}\n";
    let t = Transcript::from_bytes(text.to_vec());
    assert_eq!(t.entry_count(), 1);
    assert_eq!(
        t.line_text(0),
        Some(&b"{\"type\":\"tag\",\"tag\":\"kept\"}"[..])
    );
    assert!(t.malformed()[0].recovered_record);
}

#[test]
fn a_torn_final_line_is_reported_as_torn() {
    let text = b"{\"type\":\"tag\",\"tag\":\"x\"}\n{\"type\":\"user\",\"mess";
    let t = Transcript::from_bytes(text.to_vec());
    assert_eq!(t.entry_count(), 1);
    assert!(t.malformed()[0].torn_tail);
    assert_eq!(t.malformed()[0].line, 2);
}

fn big_text() -> String {
    let line = "{\"parentUuid\":null,\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hello\"},\"uuid\":\"u\",\"timestamp\":\"t\"}\n";
    let mut text = line.repeat((PARALLEL_MIN_BYTES as usize / line.len()) + 10);
    text.insert_str(text.len() / 2 + 7, "garbage\n");
    text
}

#[test]
fn parallel_and_serial_scans_agree() {
    let text = big_text();
    let t = Transcript::from_bytes(text.clone().into_bytes());
    let (lines, bad) = stream::join(vec![scan_in_place(text.as_bytes(), 0, text.len())]);
    assert_eq!(t.lines.len(), lines.len());
    assert_eq!(t.malformed(), &bad[..]);
    assert!(
        t.lines
            .iter()
            .zip(&lines)
            .all(|(a, b)| a.number == b.number && a.start == b.start)
    );
}

#[test]
fn streaming_for_resume_agrees_with_reading_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("t.jsonl");
    let text = big_text();
    std::fs::write(&p, &text).unwrap();
    let whole = Transcript::read(&p).unwrap();
    let streamed = Transcript::read_for_resume(&p).unwrap();
    assert_eq!(whole.malformed(), streamed.malformed());
    assert_eq!(whole.lines.len(), streamed.lines.len());
    for (a, b) in whole.lines.iter().zip(&streamed.lines) {
        assert_eq!(
            (a.number, a.file_offset, a.len, a.uuid_h),
            (b.number, b.file_offset, b.len, b.uuid_h)
        );
        // Resume parses each message while reading, instead of keeping its bytes.
        let parsed = crate::model_messages::parse_body(true, whole.raw(a, a.message.unwrap()));
        assert_eq!(b.body.as_deref(), parsed.as_ref());
        assert!(parsed.is_some() && b.message.is_none());
    }
    let idx: Vec<u32> = vec![0, 5, (streamed.lines.len() - 1) as u32];
    let again = streamed.lines_as_written(&idx).unwrap();
    for (k, &i) in idx.iter().enumerate() {
        assert_eq!(Some(&again[k][..]), whole.line_text(i as usize));
    }
}

#[test]
fn lines_longer_than_the_read_buffer_are_read_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("t.jsonl");
    let big = "x".repeat(3 << 20);
    let text = format!(
        "{{\"type\":\"tag\",\"tag\":\"a\"}}\n{{\"parentUuid\":null,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"{big}\"}},\"uuid\":\"u1\",\"timestamp\":\"t\"}}\n{{\"type\":\"tag\",\"tag\":\"b\"}}\n"
    );
    std::fs::write(&p, &text).unwrap();
    let t = Transcript::read_for_resume(&p).unwrap();
    assert!(t.malformed().is_empty());
    assert_eq!(t.lines.len(), 3);
    let l = &t.lines[1];
    assert_eq!(
        (l.number, l.len as usize),
        (2, text.lines().nth(1).unwrap().len())
    );
    let Some(crate::model_messages::LiveItem::User(m)) = l.body.as_deref() else {
        panic!("{:?}", l.kind)
    };
    assert_eq!(m.content.first_text().map(str::len), Some(big.len()));
    assert_eq!(t.lines[2].number, 3);
}

/// Regression: fields with escapes were decoded using the bytes around them, which in the
/// compact store are not their quotes.
#[test]
fn escaped_fields_decode_from_the_compact_store() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("t.jsonl");
    std::fs::write(
        &p,
        "{\"parentUuid\":null,\"type\":\"system\",\"subtype\":\"local_command\",\"content\":\"a\\n\\\"b\\\" \\u001b[1m\",\"uuid\":\"u\\u0031\",\"timestamp\":\"t\"}\n",
    )
    .unwrap();
    let t = Transcript::read_for_resume(&p).unwrap();
    let l = &t.lines[0];
    assert!(!l.whole, "resume keeps fields, not lines");
    assert_eq!(t.text(l, l.text).unwrap(), "a\n\"b\" \u{1b}[1m");
    assert_eq!(t.text(l, l.uuid).unwrap(), "u1");
}
