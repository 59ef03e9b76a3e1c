//! Rebuilding the live conversation from a transcript's lines, by the rules of
//! `COMPAT.md` ("Which entries are the live conversation").
//!
//! 1. Participants are `user`, `assistant`, `system`, `attachment` and `progress` lines
//!    with a `uuid`; the rest is metadata.
//! 2. The leaf is the non-sidechain participant no other non-sidechain line names as
//!    `parentUuid`, with the latest `timestamp` (the later line wins a tie). A sub-agent's
//!    own transcript (`subagents/agent-<id>.jsonl`, every line `isSidechain: true`) is
//!    rebuilt the same way from its sidechain lines.
//! 3. The chain is walked through `parentUuid` from the leaf back to `null` (a compact
//!    boundary has a `null` parent, so only what follows the last one is live); a cycle
//!    stops the walk.
//! 4. A missing parent on an assistant line continues from the latest earlier line of the
//!    same `message.id` (one response is written as several lines). Any other missing
//!    parent is where the reference agent silently drops all earlier history; strata
//!    bridges the gap to the nearest earlier participant in file order instead and
//!    records a [`Repair`], so a lost line never costs more than itself.
//! 5. Lines of a response and the tool results answering it that hang off the walked
//!    chain (parallel tool calls) are put back after the response's last line on it.
//!
//! The functions here are pure: they read the loader's line index and return positions.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::reader::Transcript;
use crate::reader::line::{LineInfo, LineKind, flag};

/// What the walk had to do beyond following `parentUuid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// A line's parent is not in the file: the walk continued at the nearest earlier
    /// participant instead of dropping everything before it.
    BridgedGap {
        /// The 1-based line number of the entry whose parent is missing.
        line: u32,
        /// That entry's uuid.
        uuid: String,
        /// The `parentUuid` that names no line of the file.
        missing_parent: String,
        /// The entry the walk continued at.
        bridged_to: String,
        /// Its line number.
        bridged_to_line: u32,
    },
    /// Following `parentUuid` came back to an entry already walked; the walk stopped.
    CycleStopped {
        /// The line number of the entry seen twice.
        line: u32,
        /// Its uuid.
        uuid: String,
    },
}

/// The live conversation: positions of its entries in the transcript, in order.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    /// Indices into the transcript's entries, root first.
    pub(crate) entries: Vec<u32>,
    /// The leaf the walk started from.
    pub(crate) leaf: Option<u32>,
    /// Gaps bridged and cycles cut.
    pub repairs: Vec<Repair>,
}

impl Chain {
    /// How many entries the live conversation has (all participant kinds).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no live conversation.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A fast hasher for uuids and ids: each 8-byte word is folded in with a full 64-bit
/// multiply-xorshift mix (as in splitmix64), then murmur3's finalizer. Ids are not
/// attacker-chosen keys that need SipHash's flooding resistance, and this is several times
/// cheaper, which matters with tens of thousands of lookups per resume. The mixing must
/// be thorough: a weaker multiply-rotate made related short ids of different lengths
/// (`r153-s1`, `r153-s18`) collide.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
        h
    }
}

impl IdHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        let mut z = (self.0 ^ w).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        self.0 = z ^ (z >> 31);
    }
}

/// A hasher for keys that are already [`IdHasher`] hashes: passes them through.
#[derive(Default, Clone, Copy)]
pub(crate) struct PassHasher(u64);

impl Hasher for PassHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed with this; fold anything else in case.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by an id's hash (see [`crate::reader::line::id_hash`]).
pub(crate) type HashedMap<V> = HashMap<u64, V, BuildHasherDefault<PassHasher>>;

/// Indexes over the lines the rules need.
struct Index<'a> {
    t: &'a Transcript,
    lines: &'a [LineInfo],
    /// uuid hash → the last participant line with a uuid of that hash.
    by_uuid: HashedMap<u32>,
    /// Lines displaced from `by_uuid` by a line whose *different* uuid has the same hash
    /// (a 64-bit collision): looked up by their bytes. Empty in practice; it exists so a
    /// collision can never drop a line from the chain.
    uuid_collisions: HashedMap<Vec<u32>>,
    /// `message.id` → its assistant lines, in file order.
    by_msg: HashedMap<Vec<u32>>,
    /// The side being rebuilt: the main conversation (`false`), or the sidechain of a
    /// file that holds nothing else (a sub-agent's transcript).
    sidechain: bool,
}

impl<'a> Index<'a> {
    fn new(t: &'a Transcript) -> Self {
        let lines = &t.lines[..];
        let mut by_uuid: HashedMap<u32> = HashedMap::default();
        by_uuid.reserve(lines.len());
        let mut by_msg: HashedMap<Vec<u32>> = HashedMap::default();
        let mut uuid_collisions: HashedMap<Vec<u32>> = HashedMap::default();
        let uuid_bytes = |i: u32| {
            let l = &lines[i as usize];
            l.uuid.map(|u| t.raw(l, u))
        };
        for (i, l) in lines.iter().enumerate() {
            if !l.kind.is_participant() {
                continue;
            }
            let i = to_u32(i);
            if l.uuid_h != 0
                && let Some(displaced) = by_uuid.insert(l.uuid_h, i)
                && uuid_bytes(displaced) != uuid_bytes(i)
            {
                let others = uuid_collisions.entry(l.uuid_h).or_default();
                others.retain(|&o| uuid_bytes(o) != uuid_bytes(displaced));
                others.push(displaced);
            }
            if l.kind == LineKind::Assistant && l.msg_h != 0 {
                by_msg.entry(l.msg_h).or_default().push(i);
            }
        }
        let sidechain = !lines
            .iter()
            .any(|l| l.kind.is_participant() && !l.has(flag::SIDECHAIN));
        Self {
            t,
            lines,
            by_uuid,
            uuid_collisions,
            by_msg,
            sidechain,
        }
    }

    /// Whether line `l` is on the other side than the one being rebuilt.
    fn off_side(&self, l: &LineInfo) -> bool {
        l.has(flag::SIDECHAIN) != self.sidechain
    }

    /// The last participant line whose uuid is `bytes` (of hash `h`).
    fn line_with_uuid(&self, h: u64, bytes: Option<&[u8]>) -> Option<u32> {
        let first = *self.by_uuid.get(&h)?;
        if self.uuid_of(first) == bytes {
            return Some(first);
        }
        let others = self.uuid_collisions.get(&h)?;
        others
            .iter()
            .rev()
            .copied()
            .find(|&o| self.uuid_of(o) == bytes)
    }

    fn line(&self, i: u32) -> &'a LineInfo {
        &self.lines[i as usize]
    }

    fn uuid_of(&self, i: u32) -> Option<&'a [u8]> {
        let l = self.line(i);
        l.uuid.map(|u| self.t.raw(l, u))
    }

    fn parent_of(&self, i: u32) -> Option<&'a [u8]> {
        let l = self.line(i);
        l.parent.map(|u| self.t.raw(l, u))
    }

    /// The line whose uuid is `i`'s parent. Hashes are compared first and the bytes
    /// checked, so even a 64-bit collision cannot join two unrelated lines.
    fn parent_line(&self, i: u32) -> Option<u32> {
        self.line_with_uuid(self.line(i).parent_h, self.parent_of(i))
    }

    fn text(&self, bytes: Option<&[u8]>) -> String {
        bytes
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    }

    /// Whether line `i` is the canonical (last) line of its uuid.
    fn is_canonical(&self, i: u32) -> bool {
        let h = self.line(i).uuid_h;
        h != 0 && self.line_with_uuid(h, self.uuid_of(i)) == Some(i)
    }
}

fn to_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// Rebuilds the live conversation of `t`.
pub fn build(t: &Transcript) -> Chain {
    let ix = Index::new(t);
    let Some(leaf) = find_leaf(&ix) else {
        return Chain::default();
    };
    let (walked, repairs) = walk(&ix, leaf);
    let entries = reattach(&ix, walked);
    Chain {
        entries,
        leaf: Some(leaf),
        repairs,
    }
}

/// Rule 2: the latest non-sidechain participant that no line names as its parent.
fn find_leaf(ix: &Index<'_>) -> Option<u32> {
    // Sidechain lines hanging off the main conversation (older writers put sub-agent
    // lines into the main file) do not make their parent a non-leaf: they are not part of
    // the conversation that is resumed.
    let mut has_child = vec![false; ix.lines.len()];
    for l in ix.lines {
        if ix.off_side(l) {
            continue;
        }
        if l.parent_h != 0
            && let Some(p) = ix.line_with_uuid(l.parent_h, l.parent.map(|u| ix.t.raw(l, u)))
        {
            has_child[p as usize] = true;
        }
    }
    let mut best: Option<(u32, &[u8])> = None;
    for (i, l) in ix.lines.iter().enumerate() {
        let i = to_u32(i);
        if !l.kind.is_participant()
            || ix.off_side(l)
            || has_child[i as usize]
            || !ix.is_canonical(i)
        {
            continue;
        }
        let ts = l.timestamp.map_or(&b""[..], |s| ix.t.raw(l, s));
        // `>=`: among equal timestamps the later line wins.
        if best.is_none_or(|(_, b)| ts >= b) {
            best = Some((i, ts));
        }
    }
    best.map(|(i, _)| i)
}

/// Rules 3 and 4: walks from the leaf to the root; returns the walked lines root first.
fn walk(ix: &Index<'_>, leaf: u32) -> (Vec<u32>, Vec<Repair>) {
    let mut visited = vec![false; ix.lines.len()];
    let mut chain = Vec::new();
    let mut repairs = Vec::new();
    let mut cur = leaf;
    loop {
        if visited[cur as usize] {
            repairs.push(Repair::CycleStopped {
                line: ix.lines[cur as usize].number,
                uuid: ix.text(ix.uuid_of(cur)),
            });
            break;
        }
        visited[cur as usize] = true;
        chain.push(cur);
        let Some(parent) = ix.parent_of(cur) else {
            break;
        };
        if let Some(p) = ix.parent_line(cur) {
            cur = p;
            continue;
        }
        if let Some(prev) = earlier_part_of_response(ix, cur).filter(|p| !visited[*p as usize]) {
            cur = prev;
            continue;
        }
        match nearest_earlier_participant(ix, cur, &visited) {
            Some(prev) => {
                repairs.push(Repair::BridgedGap {
                    line: ix.lines[cur as usize].number,
                    uuid: ix.text(ix.uuid_of(cur)),
                    missing_parent: ix.text(Some(parent)),
                    bridged_to: ix.text(ix.uuid_of(prev)),
                    bridged_to_line: ix.lines[prev as usize].number,
                });
                cur = prev;
            }
            None => break,
        }
    }
    chain.reverse();
    (chain, repairs)
}

/// Rule 4: the latest earlier assistant line of the same response.
fn earlier_part_of_response(ix: &Index<'_>, cur: u32) -> Option<u32> {
    let l = &ix.lines[cur as usize];
    if l.kind != LineKind::Assistant || l.msg_h == 0 {
        return None;
    }
    let lines = ix.by_msg.get(&l.msg_h)?;
    lines.iter().rev().copied().find(|&i| i < cur)
}

/// strata's repair: the nearest earlier line that can continue the conversation.
fn nearest_earlier_participant(ix: &Index<'_>, cur: u32, visited: &[bool]) -> Option<u32> {
    let sidechain = ix.lines[cur as usize].has(flag::SIDECHAIN);
    (0..cur).rev().find(|&i| {
        let l = &ix.lines[i as usize];
        l.kind.is_participant()
            && l.has(flag::SIDECHAIN) == sidechain
            && !visited[i as usize]
            && ix.is_canonical(i)
    })
}

/// Rule 5: after the last line of each response on the chain, its lines that are not on
/// the chain, then the tool results answering it that are not on the chain.
fn reattach(ix: &Index<'_>, walked: Vec<u32>) -> Vec<u32> {
    let mut on_chain = vec![false; ix.lines.len()];
    for &i in &walked {
        on_chain[i as usize] = true;
    }
    // The last chain position of each response.
    let mut last_of_msg: HashedMap<usize> = HashedMap::default();
    for (pos, &i) in walked.iter().enumerate() {
        let l = &ix.lines[i as usize];
        if l.kind == LineKind::Assistant && l.msg_h != 0 {
            last_of_msg.insert(l.msg_h, pos);
        }
    }
    if last_of_msg.is_empty() {
        return walked;
    }
    let parts_of = |m: u64| ix.by_msg.get(&m).map_or(&[][..], |v| &v[..]);
    // Tool results by the tool use they answer, for the responses on the chain only.
    let mut wanted: HashedMap<()> = HashedMap::default();
    for &m in last_of_msg.keys() {
        for &a in parts_of(m) {
            for id in ix.lines[a as usize].tool_ids.iter() {
                wanted.insert(id.hash, ());
            }
        }
    }
    let mut answers: HashedMap<Vec<u32>> = HashedMap::default();
    if !wanted.is_empty() {
        for (i, l) in ix.lines.iter().enumerate() {
            if l.kind != LineKind::User || on_chain[i] || ix.off_side(l) {
                continue;
            }
            for id in l.tool_ids.iter() {
                if wanted.contains_key(&id.hash) {
                    answers.entry(id.hash).or_default().push(to_u32(i));
                }
            }
        }
    }
    let mut inserted = vec![false; ix.lines.len()];
    let mut out = Vec::with_capacity(walked.len());
    for (pos, &i) in walked.iter().enumerate() {
        out.push(i);
        let l = &ix.lines[i as usize];
        if l.kind != LineKind::Assistant || l.msg_h == 0 || last_of_msg.get(&l.msg_h) != Some(&pos)
        {
            continue;
        }
        let parts = parts_of(l.msg_h);
        for &a in parts {
            if !on_chain[a as usize] && !inserted[a as usize] && !ix.off_side(&ix.lines[a as usize])
            {
                inserted[a as usize] = true;
                out.push(a);
            }
        }
        let mut results: Vec<u32> = parts
            .iter()
            .flat_map(|&a| ix.lines[a as usize].tool_ids.iter())
            .filter_map(|id| answers.get(&id.hash))
            .flatten()
            .copied()
            .filter(|&u| !inserted[u as usize])
            .collect();
        results.sort_unstable();
        results.dedup();
        for u in results {
            inserted[u as usize] = true;
            out.push(u);
        }
    }
    out
}

#[cfg(test)]
mod tests;
