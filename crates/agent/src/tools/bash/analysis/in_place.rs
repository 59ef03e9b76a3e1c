//! The in-place editors: which files `sed -i`, `perl -i`, `gawk -i inplace` and `git
//! config` edit (for [`writes`](super::writes)). Each reads its own option syntax: the
//! script or program text comes first unless an option gave it, and only the files
//! after it are written.

use super::super::shell::is_assignment;
use super::options::{AWK, GIT_CONFIG, SED, parse};

/// `sed -i`: the files after the script.
pub(super) fn sed(args: &[String]) -> Vec<String> {
    // `-i` takes an optional suffix only attached, so it is a flag to `parse`; in
    // a cluster the rest after `i` is that suffix (`-ni.bak`, `-Ei`).
    let mut in_place = false;
    let mut cleaned: Vec<String> = Vec::new();
    for a in args {
        if a.starts_with("--in-place") {
            in_place = true;
            continue;
        }
        if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.starts_with('-')) {
            let mut kept = String::new();
            for c in cluster.chars() {
                if SED.short_value.contains(c) {
                    kept.push(c);
                    // The rest is this option's value.
                    let at = cluster.find(c).map_or(cluster.len(), |i| i + 1);
                    kept.push_str(&cluster[at..]);
                    break;
                }
                if c == 'i' {
                    in_place = true;
                    break;
                }
                kept.push(c);
            }
            if !kept.is_empty() {
                cleaned.push(format!("-{kept}"));
            }
            continue;
        }
        cleaned.push(a.clone());
    }
    if !in_place {
        return Vec::new();
    }
    let p = parse(&cleaned, &SED);
    let script_given = p
        .values
        .iter()
        .any(|(o, _)| matches!(o.as_str(), "-e" | "-f" | "--expression" | "--file"));
    p.operands
        .iter()
        .skip(usize::from(!script_given))
        .map(|f| (*f).to_owned())
        .collect()
}

/// `gawk -i inplace`: the files after the program text.
pub(super) fn awk(args: &[String]) -> Vec<String> {
    let p = parse(args, &AWK);
    let in_place = p
        .values
        .iter()
        .any(|(o, v)| matches!(o.as_str(), "-i" | "--include") && v.starts_with("inplace"));
    if !in_place {
        return Vec::new();
    }
    let program_given = p.value(&["-f", "--file", "-e", "--source"]).is_some();
    // `var=value` operands are assignments, not files.
    p.operands
        .iter()
        .skip(usize::from(!program_given))
        .filter(|f| !is_assignment(f))
        .map(|f| (*f).to_owned())
        .collect()
}

/// `perl -i`: the files after the code (`-e`) or the script.
pub(super) fn perl(args: &[String]) -> Vec<String> {
    let mut in_place = false;
    let mut code_given = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if a == "--" {
            break;
        }
        let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) else {
            i -= 1;
            break;
        };
        for c in cluster.chars() {
            match c {
                'i' => {
                    in_place = true;
                    break; // the rest is the backup extension
                }
                'e' | 'E' => {
                    code_given = true;
                    if cluster.ends_with(c) {
                        i += 1; // the code is the next word
                    }
                    break;
                }
                // The rest of the cluster is this switch's value.
                'I' | 'M' | 'm' | 'x' | '0' | 'l' | 'C' | 'd' | 'D' | 'F' => break,
                _ => {}
            }
        }
    }
    if !in_place {
        return Vec::new();
    }
    let files = args.get(i..).unwrap_or(&[]);
    files
        .iter()
        .skip(usize::from(!code_given))
        .cloned()
        .collect()
}

/// `git config ARGS` (after `config`): the file it changes, if it changes one. Reading
/// forms (`KEY` alone, `--get…`, `--list`, `get`, `list`) change nothing.
pub(super) fn git_config(args: &[String]) -> Option<String> {
    let p = parse(args, &GIT_CONFIG);
    let sub = p.operands.first().copied();
    let reads = [
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "--list",
        "-l",
    ];
    let changes = [
        "--unset",
        "--unset-all",
        "--add",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "--edit",
        "-e",
    ];
    let writes = match sub {
        Some("get" | "list") => false,
        Some("set" | "unset" | "rename-section" | "remove-section" | "edit") => true,
        _ if reads.iter().any(|f| p.has(f)) => false,
        _ if changes.iter().any(|f| p.has(f)) => true,
        _ => p.operands.len() >= 2,
    };
    if !writes {
        return None;
    }
    Some(match p.value(&["-f", "--file"]) {
        Some(file) => file.to_owned(),
        None if p.has("--global") => "~/.gitconfig".to_owned(),
        None if p.has("--system") => "/etc/gitconfig".to_owned(),
        // The repository's own (`--local`, `--worktree` or none): named `.git/config`
        // relative to wherever it runs, which is protected by its `.git` wherever.
        None => ".git/config".to_owned(),
    })
}
