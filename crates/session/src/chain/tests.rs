//! Crafted transcripts for each rule of the chain (COMPAT.md "Which entries are the live
//! conversation").

use super::*;
use crate::reader::Transcript;

/// A user prompt.
pub(crate) fn user(uuid: &str, parent: Option<&str>, ts: u32) -> String {
    format!(
        r#"{{"parentUuid":{},"isSidechain":false,"type":"user","message":{{"role":"user","content":"prompt {uuid}"}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:{ts:02}.000Z"}}"#,
        parent_json(parent)
    )
}

/// One assistant line of response `msg` holding `block` (a JSON content block).
pub(crate) fn assistant(
    uuid: &str,
    parent: Option<&str>,
    ts: u32,
    msg: &str,
    block: &str,
) -> String {
    format!(
        r#"{{"parentUuid":{},"isSidechain":false,"message":{{"model":"claude-sonnet-4-5","id":"{msg}","type":"message","role":"assistant","content":[{block}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":1,"output_tokens":1}}}},"requestId":"req_{msg}","type":"assistant","uuid":"{uuid}","timestamp":"2026-01-01T00:00:{ts:02}.000Z"}}"#,
        parent_json(parent)
    )
}

/// A user line answering tool use `tool`.
pub(crate) fn result(uuid: &str, parent: Option<&str>, ts: u32, tool: &str) -> String {
    format!(
        r#"{{"parentUuid":{},"isSidechain":false,"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"{tool}","type":"tool_result","content":"out {tool}"}}]}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:{ts:02}.000Z","toolUseResult":{{"stdout":"out"}}}}"#,
        parent_json(parent)
    )
}

pub(crate) fn text(t: &str) -> String {
    format!(r#"{{"type":"text","text":"{t}"}}"#)
}

pub(crate) fn tool_use(id: &str) -> String {
    format!(r#"{{"type":"tool_use","id":"{id}","name":"Bash","input":{{"command":"ls"}}}}"#)
}

fn parent_json(p: Option<&str>) -> String {
    p.map_or("null".to_owned(), |p| format!("\"{p}\""))
}

fn chain_of(lines: &[String]) -> (Vec<String>, Vec<Repair>) {
    let t = Transcript::from_bytes((lines.join("\n") + "\n").into_bytes());
    let c = build(&t);
    let uuids = c
        .entries
        .iter()
        .map(|&i| {
            t.field(i as usize, t.lines[i as usize].uuid)
                .unwrap()
                .into_owned()
        })
        .collect();
    (uuids, c.repairs)
}

#[test]
fn sp3_a_linear_conversation_is_live_whole() {
    let (c, r) = chain_of(&[
        user("u1", None, 1),
        assistant("a1", Some("u1"), 2, "m1", &text("hi")),
        user("u2", Some("a1"), 3),
        assistant("a2", Some("u2"), 4, "m2", &text("bye")),
    ]);
    assert_eq!(c, ["u1", "a1", "u2", "a2"]);
    assert!(r.is_empty());
}

#[test]
fn sp3_dead_branches_left_by_a_rewind_are_not_live() {
    let (c, _) = chain_of(&[
        user("u1", None, 1),
        assistant("a1", Some("u1"), 2, "m1", &text("hi")),
        user("dead", Some("a1"), 3),
        assistant("dead-a", Some("dead"), 4, "m2", &text("old answer")),
        user("u3", Some("a1"), 5),
        assistant("a3", Some("u3"), 6, "m3", &text("new answer")),
    ]);
    assert_eq!(c, ["u1", "a1", "u3", "a3"]);
}

#[test]
fn sp3_the_leaf_is_the_latest_timestamp_not_the_last_line() {
    let (c, _) = chain_of(&[
        user("u1", None, 1),
        assistant("late", Some("u1"), 9, "m1", &text("later in time")),
        assistant("early", Some("u1"), 5, "m2", &text("later in file")),
    ]);
    assert_eq!(c, ["u1", "late"]);
    // Equal timestamps: the later line wins.
    let (c, _) = chain_of(&[
        user("u1", None, 1),
        assistant("x", Some("u1"), 5, "m1", &text("a")),
        assistant("y", Some("u1"), 5, "m2", &text("b")),
    ]);
    assert_eq!(c, ["u1", "y"]);
}

#[test]
fn sp3_sidechain_lines_are_never_the_leaf() {
    let side = user("side", Some("a1"), 9).replace("\"isSidechain\":false", "\"isSidechain\":true");
    let (c, _) = chain_of(&[
        user("u1", None, 1),
        assistant("a1", Some("u1"), 2, "m1", &text("hi")),
        side,
    ]);
    assert_eq!(c, ["u1", "a1"]);
}

#[test]
fn sp3_only_what_follows_the_last_compact_boundary_is_live() {
    let boundary = |uuid: &str, logical: &str, ts: u32| {
        format!(
            r#"{{"parentUuid":null,"logicalParentUuid":"{logical}","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-01-01T00:00:{ts:02}.000Z","uuid":"{uuid}","level":"info","compactMetadata":{{"trigger":"auto","preTokens":1000}}}}"#
        )
    };
    let (c, r) = chain_of(&[
        user("u1", None, 1),
        assistant("a1", Some("u1"), 2, "m1", &text("hi")),
        boundary("b1", "a1", 3),
        user("s1", Some("b1"), 4),
        assistant("a2", Some("s1"), 5, "m2", &text("x")),
        boundary("b2", "a2", 6),
        user("s2", Some("b2"), 7),
        assistant("a3", Some("s2"), 8, "m3", &text("y")),
    ]);
    assert_eq!(c, ["b2", "s2", "a3"]);
    assert!(r.is_empty());
}

#[test]
fn sp3_a_cycle_stops_the_walk() {
    let (c, r) = chain_of(&[
        user("x", Some("y"), 1),
        user("y", Some("x"), 2),
        assistant("leaf", Some("y"), 3, "m1", &text("t")),
    ]);
    assert_eq!(c, ["x", "y", "leaf"]);
    assert!(matches!(&r[..], [Repair::CycleStopped { uuid, .. }] if uuid == "y"));
}

#[test]
fn sp3_a_lost_line_is_bridged_and_reported_instead_of_dropping_history() {
    // u2 was lost in a crash; a2 names it as parent.
    let (c, r) = chain_of(&[
        user("u1", None, 1),
        assistant("a1", Some("u1"), 2, "m1", &text("hi")),
        assistant("a2", Some("u2-lost"), 4, "m2", &text("answer")),
        user("u3", Some("a2"), 5),
    ]);
    assert_eq!(
        c,
        ["u1", "a1", "a2", "u3"],
        "the reference agent would keep only a2, u3"
    );
    assert_eq!(
        r,
        [Repair::BridgedGap {
            line: 3,
            uuid: "a2".into(),
            missing_parent: "u2-lost".into(),
            bridged_to: "a1".into(),
            bridged_to_line: 2,
        }]
    );
}

#[test]
fn sp3_a_split_response_with_a_lost_parent_continues_at_its_earlier_part_silently() {
    let (c, r) = chain_of(&[
        user("u1", None, 1),
        assistant("p1", Some("u1"), 2, "m1", &text("part one")),
        user("noise", Some("u1"), 2),
        assistant("p2", Some("lost"), 3, "m1", &text("part two")),
    ]);
    assert_eq!(c, ["u1", "p1", "p2"]);
    assert!(r.is_empty());
}

#[test]
fn sp3_parallel_tool_results_and_sibling_blocks_are_put_back() {
    // One response m1 with a text and two tool uses; the second block and the first
    // result hang off the chain the walk follows.
    let (c, _) = chain_of(&[
        user("u1", None, 1),
        assistant("t", Some("u1"), 2, "m1", &text("let me look")),
        assistant("tu1", Some("t"), 3, "m1", &tool_use("toolu_1")),
        assistant("tu2", Some("t"), 4, "m1", &tool_use("toolu_2")),
        result("r1", Some("tu1"), 5, "toolu_1"),
        result("r2", Some("tu2"), 6, "toolu_2"),
        assistant("a2", Some("r2"), 7, "m2", &text("done")),
    ]);
    assert_eq!(c, ["u1", "t", "tu2", "tu1", "r1", "r2", "a2"]);
}

#[test]
fn an_empty_or_metadata_only_transcript_has_no_chain() {
    let (c, r) = chain_of(&[r#"{"type":"summary","summary":"s","leafUuid":"x"}"#.to_owned()]);
    assert!(c.is_empty() && r.is_empty());
}

mod properties {
    use proptest::prelude::*;

    use super::super::*;
    use super::{assistant, result, tool_use, user};
    use crate::reader::Transcript;

    fn graph() -> impl Strategy<Value = Vec<(u8, Option<usize>, u8, u8, bool)>> {
        prop::collection::vec(
            (
                0u8..3,
                prop::option::of(0usize..30),
                any::<u8>(),
                0u8..5,
                prop::bool::weighted(0.1),
            ),
            0..30,
        )
    }

    fn render(spec: &[(u8, Option<usize>, u8, u8, bool)]) -> String {
        spec.iter()
            .enumerate()
            .map(|(i, &(kind, parent, ts, msg, side))| {
                let uuid = format!("n{i}");
                let p = parent.map(|p| format!("n{p}"));
                let ts = u32::from(ts % 60);
                let line = match kind {
                    0 => result(&uuid, p.as_deref(), ts, &format!("t{msg}")),
                    1 => assistant(
                        &uuid,
                        p.as_deref(),
                        ts,
                        &format!("m{msg}"),
                        &tool_use(&format!("t{msg}")),
                    ),
                    _ => user(&uuid, p.as_deref(), ts),
                };
                if side {
                    line.replace("\"isSidechain\":false", "\"isSidechain\":true")
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Over arbitrary parent graphs (cycles, self-parents, missing parents, split
        /// responses, sidechains): every entry appears once, the leaf is in the chain and
        /// on the main side (the sidechain only in a sub-agent's own file), and
        /// every bridged gap names a parent that really is absent.
        #[test]
        fn chain_invariants_hold_on_arbitrary_graphs(spec in graph()) {
            let t = Transcript::from_bytes(render(&spec).into_bytes());
            let c = build(&t);
            let mut seen = std::collections::HashSet::new();
            for &i in &c.entries {
                prop_assert!(seen.insert(i), "entry {i} twice");
                prop_assert!(t.lines[i as usize].kind.is_participant());
            }
            if let Some(leaf) = c.leaf {
                prop_assert!(c.entries.contains(&leaf));
                // The main conversation when there is one; a file of sidechain lines
                // only (a sub-agent's transcript) is rebuilt from them.
                let has_main = t.lines.iter().any(|l| l.kind.is_participant() && !l.has(flag::SIDECHAIN));
                prop_assert_eq!(t.lines[leaf as usize].has(flag::SIDECHAIN), !has_main);

            } else {
                prop_assert!(c.entries.is_empty());
            }
            let uuids: std::collections::HashSet<String> = (0..spec.len()).map(|i| format!("n{i}")).collect();
            for r in &c.repairs {
                if let Repair::BridgedGap { missing_parent, .. } = r {
                    prop_assert!(!uuids.contains(missing_parent));
                }
            }
            // A graph without missing parents and cycles needs no repair.
            let acyclic_and_whole = spec.iter().enumerate().all(|(i, s)| s.1.is_none_or(|p| p < i));
            if acyclic_and_whole {
                prop_assert!(c.repairs.is_empty(), "{:?}", c.repairs);
            }
        }
    }
}

/// Regression: related short ids of different lengths (`r153-s1`, `r153-s18`) hashed
/// alike, and the later line displaced the earlier from the uuid index, so a valid record
/// dropped out of the live chain and a false gap was reported. Found by the writer's
/// crash test.
#[test]
fn regression_short_ids_of_different_lengths_do_not_collide() {
    use std::hash::Hasher as _;
    let hash = |s: &str| {
        let mut h = IdHasher::default();
        h.write(s.as_bytes());
        h.write_usize(s.len());
        h.finish()
    };
    assert_ne!(hash("r153-s1"), hash("r153-s18"));
    let (chain, repairs) = chain_of(&[
        user("r153-s0", None, 1),
        user("r153-s1", Some("r153-s0"), 2),
        user("r153-s2", Some("r153-s1"), 3),
        user("r153-s18", None, 0),
    ]);
    assert_eq!(chain, ["r153-s0", "r153-s1", "r153-s2"]);
    assert!(repairs.is_empty(), "{repairs:?}");
}

/// Even a true 64-bit collision of two uuids keeps both lines findable: forced here by
/// giving two different uuids the same hash.
#[test]
fn a_uuid_hash_collision_never_drops_a_line_from_the_chain() {
    let lines = [
        user("u0", None, 1),
        user("u1", Some("u0"), 2),
        user("u2", Some("u1"), 3),
        user("zz", None, 0),
    ];
    let mut t = Transcript::from_bytes((lines.join("\n") + "\n").into_bytes());
    let forced = t.lines[1].uuid_h;
    t.lines[3].uuid_h = forced;
    let c = build(&t);
    let uuids: Vec<String> = c
        .entries
        .iter()
        .map(|&i| {
            t.field(i as usize, t.lines[i as usize].uuid)
                .unwrap()
                .into_owned()
        })
        .collect();
    assert_eq!(uuids, ["u0", "u1", "u2"]);
    assert!(c.repairs.is_empty(), "{:?}", c.repairs);
}
