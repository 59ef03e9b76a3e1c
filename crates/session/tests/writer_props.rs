//! Property test of the transcript writer against a model (SP-1, SP-5): any sequence of
//! appends (messages and metadata, small and large), syncs, reopenings and crashes that
//! tear the last line leaves a file whose whole lines are exactly the records the model
//! expects, in order, with one malformed line per tear and nothing fused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use proptest::prelude::*;
use serde_json::{Value, json};
use strata_session::writer::TranscriptWriter;

#[derive(Debug, Clone)]
enum Op {
    /// Append a record: a message (`user`) or metadata, with a body of this many bytes.
    Append { message: bool, size: usize },
    /// Sync, then check the file against the model.
    Sync,
    /// Close the writer and open a new one on the same file.
    Reopen,
    /// Close the writer, leave a torn record at the end of the file (if any), reopen.
    CrashTearing { keep: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<bool>(), prop_oneof![0usize..200, 60_000usize..70_000])
            .prop_map(|(message, size)| Op::Append { message, size }),
        2 => Just(Op::Sync),
        1 => Just(Op::Reopen),
        1 => (1usize..40).prop_map(|keep| Op::CrashTearing { keep }),
    ]
}

/// What the file must hold.
#[derive(Default)]
struct Model {
    /// Records in the file (or about to be, once written), by sequence number.
    written: Vec<u64>,
    /// Metadata appended before the first message: held in memory, not in the file.
    held: Vec<u64>,
    file_exists: bool,
    tears: usize,
}

impl Model {
    fn append(&mut self, seq: u64, message: bool) {
        if self.file_exists || message {
            self.written.append(&mut self.held);
            self.written.push(seq);
            self.file_exists = true;
        } else {
            self.held.push(seq);
        }
    }

    /// The writer was closed: held metadata of a file-less session is gone by design.
    fn closed(&mut self) {
        self.held.clear();
    }
}

fn check(path: &std::path::Path, model: &Model) -> Result<(), TestCaseError> {
    if !model.file_exists {
        prop_assert!(!path.exists(), "metadata alone must not create the file");
        return Ok(());
    }
    let text = std::fs::read_to_string(path).unwrap();
    let mut seqs = Vec::new();
    let mut malformed = 0;
    for line in text.lines() {
        match serde_json::from_str::<Value>(line) {
            Ok(v) => seqs.push(v["seq"].as_u64().unwrap()),
            Err(_) => malformed += 1,
        }
    }
    prop_assert_eq!(&seqs, &model.written);
    prop_assert_eq!(malformed, model.tears);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn sp5_file_always_matches_the_model(ops in prop::collection::vec(op(), 1..40)) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("p/s.jsonl");
        let mut model = Model::default();
        let mut writer = Some(TranscriptWriter::open(&path).unwrap());
        let mut seq = 0u64;
        for op in ops {
            match op {
                Op::Append { message, size } => {
                    let kind = if message { "user" } else { "custom-title" };
                    let pad = "\"x\n".repeat(size / 3);
                    writer.as_ref().unwrap()
                        .append(&json!({"type": kind, "seq": seq, "pad": pad})).unwrap();
                    model.append(seq, message);
                    seq += 1;
                }
                Op::Sync => {
                    writer.as_ref().unwrap().sync().unwrap();
                    check(&path, &model)?;
                }
                Op::Reopen => {
                    writer.take().unwrap().close().unwrap();
                    model.closed();
                    check(&path, &model)?;
                    writer = Some(TranscriptWriter::open(&path).unwrap());
                }
                Op::CrashTearing { keep } => {
                    writer.take().unwrap().close().unwrap();
                    model.closed();
                    if model.file_exists {
                        let torn = serde_json::to_string(&json!({"type": "user", "seq": 999_999})).unwrap();
                        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
                        f.write_all(&torn.as_bytes()[..keep.min(torn.len() - 1)]).unwrap();
                        model.tears += 1;
                    }
                    writer = Some(TranscriptWriter::open(&path).unwrap());
                }
            }
        }
        writer.take().unwrap().close().unwrap();
        model.closed();
        check(&path, &model)?;
    }
}
