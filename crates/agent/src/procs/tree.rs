//! Reading the process tree from `/proc`: who descends from whom, and whether a process
//! still runs.
//!
//! Why `/proc/<pid>/stat` and not `/proc/<pid>/task/<tid>/children`: the `children` file
//! exists only on kernels built with `CONFIG_PROC_CHILDREN`, which common distribution
//! kernels (and this project's CI) lack; every Linux has `stat` with the parent pid.

use std::collections::HashMap;

/// The parent pid and state letter of a process, from its `/proc/<pid>/stat` text.
///
/// The command name (second field) is in parentheses and may itself contain `)` and
/// spaces, so the fields are read after the *last* `)`.
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Every process whose parent chain reaches `root` (not `root` itself), parents before
/// their children. Processes that vanish while the table is read are skipped.
pub(crate) fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            && let Some((_, ppid)) = parse_stat(&stat)
        {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut out = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        if let Some(kids) = children.remove(&parent) {
            out.extend_from_slice(&kids);
            next.extend(kids);
        }
    }
    out
}

/// Whether `pid` has ended: no such process, or a zombie waiting to be reaped (it runs
/// no code and holds no files any more).
pub(crate) fn has_ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => matches!(parse_stat(&stat), None | Some(('Z' | 'X' | 'x', _))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        assert_eq!(
            parse_stat("42 (a) b) (c) S 7 42 42 0 -1"),
            Some(('S', 7)),
            "a command name with `)` and spaces"
        );
        assert_eq!(parse_stat("9 (sleep) Z 1 9"), Some(('Z', 1)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn this_process_descends_from_its_parent_and_runs() {
        let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        let parent = i32::try_from(std::os::unix::process::parent_id()).unwrap_or(0);
        assert!(descendants(parent).contains(&me));
        assert!(!has_ended(me));
        assert!(has_ended(i32::MAX), "no process has the largest pid");
    }
}
