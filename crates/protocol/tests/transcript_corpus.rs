//! Every line of the reference agent's corpus parses into a typed [`Entry`], writes back to
//! the same JSON value, and survives a [`RawEntry`] round trip byte for byte (SP-1, fork).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use serde_json::Value;
use strata_protocol::transcript::{Entry, EntryKind, RawEntry};

/// `<STRATA_CORPUS_DIR>/claude-code`; `None` when the variable is unset (a fresh clone),
/// said once on stderr. The same rule as `strata_testkit::corpus`, written out here
/// because the test kit is built on this crate.
fn corpus_dir() -> Option<PathBuf> {
    use std::io::Write;
    static SKIP: std::sync::Once = std::sync::Once::new();
    let Some(root) = std::env::var_os("STRATA_CORPUS_DIR").filter(|v| !v.is_empty()) else {
        // Straight to the handle: the harness's capture would swallow `eprintln!`.
        SKIP.call_once(|| {
            let _ = writeln!(
                std::io::stderr(),
                "transcript_corpus: real-corpus tests skipped: STRATA_CORPUS_DIR is not set \
                 (.ci/run sets it to ../shared/corpus)"
            );
        });
        return None;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(root);
    let dir = root.join("claude-code");
    assert!(
        dir.is_dir(),
        "STRATA_CORPUS_DIR={} has no claude-code/ directory; point it at the corpus root \
         or unset it to skip the real-corpus tests",
        root.display()
    );
    Some(dir)
}

fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            jsonl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// Every non-empty line of the corpus; `None` without the corpus.
fn corpus_lines() -> Option<Vec<(PathBuf, usize, String)>> {
    let mut files = Vec::new();
    jsonl_files(&corpus_dir()?, &mut files);
    files.sort();
    assert_eq!(files.len(), 30, "the corpus has 30 transcript files");
    let mut lines = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, l) in text.lines().enumerate() {
            if !l.trim().is_empty() {
                lines.push((f.clone(), i + 1, l.to_owned()));
            }
        }
    }
    Some(lines)
}

#[test]
fn sp1_every_corpus_line_parses_as_a_known_entry_and_writes_back_the_same_value() {
    let Some(lines) = corpus_lines() else { return };
    assert!(lines.len() > 10_000);
    for (file, n, line) in &lines {
        let entry = Entry::parse(line).unwrap_or_else(|e| panic!("{}:{n}: {e}", file.display()));
        assert!(
            entry.kind().is_some(),
            "{}:{n}: unknown type",
            file.display()
        );
        let original: Value = serde_json::from_str(line).unwrap();
        let written: Value = serde_json::from_str(&entry.to_line().unwrap()).unwrap();
        assert_eq!(
            written,
            original,
            "{}:{n}: the typed round trip changed the line",
            file.display()
        );
    }
}

#[test]
fn sp1_conversation_entries_are_written_with_the_reference_header_order() {
    let Some(lines) = corpus_lines() else { return };
    for (file, n, line) in lines {
        let entry = Entry::parse(&line).unwrap();
        if entry.envelope().is_none() {
            continue;
        }
        let keys = |s: &str| -> Vec<String> {
            let v: serde_json::Map<String, Value> = serde_json::from_str(s).unwrap();
            v.keys().take(7).cloned().collect()
        };
        let written = entry.to_line().unwrap();
        assert_eq!(keys(&written), keys(&line), "{}:{n}", file.display());
        assert!(
            written.starts_with("{\"parentUuid\":"),
            "{}:{n}",
            file.display()
        );
    }
}

#[test]
fn sp1_raw_entries_round_trip_every_corpus_line_byte_for_byte() {
    let Some(lines) = corpus_lines() else { return };
    for (file, n, line) in lines {
        let raw = RawEntry::parse(&line).unwrap();
        assert_eq!(raw.to_line(), line, "{}:{n}", file.display());
    }
}

#[test]
fn fork_rewrites_only_the_session_id_and_keeps_unknown_fields_in_place() {
    let line = r#"{"parentUuid":null,"isSidechain":false,"sessionId":"old","zFuture":{"b":1,"a":[1.50,2]},"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"t"}"#;
    let mut raw = RawEntry::parse(line).unwrap();
    raw.set("sessionId", "new").unwrap();
    assert_eq!(raw.to_line(), line.replace("\"old\"", "\"new\""));
    assert_eq!(raw.get_str("sessionId").as_deref(), Some("new"));
}

#[test]
fn unknown_entry_types_are_kept_whole() {
    let line = r#"{"type":"marble-origami-commit","z":1,"a":{"x":[true]}}"#;
    let entry = Entry::parse(line).unwrap();
    assert!(matches!(entry, Entry::Unknown(_)));
    assert_eq!(entry.kind(), None);
    assert_eq!(entry.to_line().unwrap(), line);
}

#[test]
fn every_entry_kind_round_trips_its_type_string() {
    for k in EntryKind::ALL {
        assert_eq!(EntryKind::parse(k.as_str()), Some(k));
    }
    let participants: Vec<_> = EntryKind::ALL
        .into_iter()
        .filter(|k| k.is_chain_participant())
        .map(EntryKind::as_str)
        .collect();
    assert_eq!(
        participants,
        ["user", "assistant", "system", "attachment", "progress"]
    );
}

#[test]
fn bad_lines_get_a_clear_error() {
    assert!(matches!(
        Entry::parse("{\"type\":\"user\""),
        Err(strata_protocol::transcript::EntryError::NotJson(_))
    ));
    assert_eq!(
        Entry::parse(r#"{"type":"user","message":{"role":"user","content":"x"}}"#)
            .unwrap_err()
            .to_string(),
        "missing field \"uuid\""
    );
    assert!(matches!(
        Entry::parse("{\"a\":1}"),
        Err(strata_protocol::transcript::EntryError::NoType)
    ));
}
