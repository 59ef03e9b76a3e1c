//! Glob and Grep on a small tree with a `.gitignore`: ignored files stay hidden, hidden
//! files are found, binary files are skipped, results are ordered by modification time
//! (newest first) and capped, and every output mode of Grep has the documented shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_support;

use std::fs::File;
use std::time::{Duration, SystemTime};

use serde_json::json;
use strata_agent::tools::{Glob, Grep};
use tools_support::Project;

/// The tree; `order` lists files oldest first, so newest-first results are reversed.
fn tree() -> Project {
    let p = Project::new();
    p.write(".gitignore", "target/\n*.log\n");
    let files = [
        ("docs/readme.md", "hello docs\n"),
        (
            "src/lib.rs",
            "pub fn hello() -> &'static str {\n    \"Hello\"\n}\n",
        ),
        ("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n"),
        (".hidden/config.rs", "// hello from a hidden dir\n"),
        ("target/debug/out.rs", "fn hello() {}\n"),
        ("app.log", "hello log\n"),
    ];
    let base = SystemTime::now() - Duration::from_secs(1000);
    for (i, (rel, body)) in files.iter().enumerate() {
        let path = p.write(rel, body);
        let f = File::options().write(true).open(&path).unwrap();
        f.set_modified(base + Duration::from_secs(10 * i as u64))
            .unwrap();
    }
    std::fs::write(p.path("data.bin"), b"hello\0\x01\x02").unwrap();
    File::options()
        .write(true)
        .open(p.path("data.bin"))
        .unwrap()
        .set_modified(base)
        .unwrap();
    p
}

fn rel_lines(p: &Project, content: &str) -> Vec<String> {
    let root = format!("{}/", p.root.display());
    content.lines().map(|l| l.replace(&root, "")).collect()
}

#[tokio::test]
async fn glob_honours_gitignore_and_sorts_newest_first() {
    let p = tree();
    let out = p.call(&Glob, json!({"pattern": "**/*.rs"})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        rel_lines(&p, &out.content),
        [".hidden/config.rs", "src/main.rs", "src/lib.rs"]
    );
    let d = out.detail.unwrap();
    assert_eq!(d["numFiles"], 3);
    assert_eq!(d["truncated"], false);
}

#[tokio::test]
async fn glob_star_stays_in_one_directory_and_path_scopes_the_search() {
    let p = tree();
    let out = p.call(&Glob, json!({"pattern": "*.rs"})).await;
    assert_eq!(out.content, "No files found");
    let out = p
        .call(&Glob, json!({"pattern": "*.rs", "path": "src"}))
        .await;
    assert_eq!(rel_lines(&p, &out.content), ["src/main.rs", "src/lib.rs"]);
    let abs = format!("{}/docs/*.md", p.root.display());
    let out = p.call(&Glob, json!({"pattern": abs})).await;
    assert_eq!(rel_lines(&p, &out.content), ["docs/readme.md"]);
}

#[tokio::test]
async fn glob_results_are_capped_at_100() {
    let p = Project::new();
    for i in 0..120 {
        p.write(&format!("many/f{i:03}.txt"), "x");
    }
    let out = p.call(&Glob, json!({"pattern": "many/*.txt"})).await;
    let d = out.detail.as_ref().unwrap();
    assert_eq!(d["numFiles"], 100);
    assert_eq!(d["truncated"], true);
    assert!(
        out.content
            .contains("most recently modified of 120 matches"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn glob_invalid_input_is_named() {
    let p = tree();
    for (input, says) in [
        (json!({}), "missing field `pattern`"),
        (json!({"pattern": ""}), "`pattern`: must not be empty"),
        (json!({"pattern": "a[b"}), "`pattern`"),
        (json!({"pattern": "*", "path": 3}), "`path`"),
    ] {
        let out = p.call(&Glob, input.clone()).await;
        assert!(out.is_error, "{input}");
        assert!(out.content.contains(says), "{input}: {}", out.content);
    }
    let out = p.call(&Glob, json!({"pattern": "*", "path": "nope"})).await;
    assert!(out.is_error && out.content.contains("Directory does not exist"));
}

#[tokio::test]
async fn grep_files_with_matches_skips_ignored_and_binary_files() {
    let p = tree();
    let out = p.call(&Grep, json!({"pattern": "hello", "-i": true})).await;
    assert!(!out.is_error, "{out:?}");
    let lines = rel_lines(&p, &out.content);
    assert_eq!(lines[0], "Found 4 files");
    assert_eq!(
        lines[1..],
        [
            ".hidden/config.rs",
            "src/main.rs",
            "src/lib.rs",
            "docs/readme.md"
        ]
    );
    assert_eq!(out.detail.unwrap()["mode"], "files_with_matches");
}

#[tokio::test]
async fn grep_is_case_sensitive_unless_asked() {
    let p = tree();
    let out = p
        .call(&Grep, json!({"pattern": "Hello", "path": "src"}))
        .await;
    assert_eq!(rel_lines(&p, &out.content), ["Found 1 file", "src/lib.rs"]);
}

#[tokio::test]
async fn grep_content_shows_numbered_lines_and_context() {
    let p = tree();
    let out = p
        .call(
            &Grep,
            json!({"pattern": "println", "path": "src/main.rs", "output_mode": "content"}),
        )
        .await;
    assert_eq!(out.content, "2:    println!(\"hello\");");
    let out = p
        .call(
            &Grep,
            json!({"pattern": "println", "path": "src", "output_mode": "content", "-C": 1, "-n": true}),
        )
        .await;
    assert_eq!(
        rel_lines(&p, &out.content),
        [
            "src/main.rs-1-fn main() {",
            "src/main.rs:2:    println!(\"hello\");",
            "src/main.rs-3-}"
        ]
    );
    let out = p
        .call(
            &Grep,
            json!({"pattern": "println", "path": "src", "output_mode": "content", "-n": false}),
        )
        .await;
    assert_eq!(
        rel_lines(&p, &out.content),
        ["src/main.rs:    println!(\"hello\");"]
    );
}

#[tokio::test]
async fn grep_count_glob_type_and_head_limit() {
    let p = tree();
    let out = p
        .call(
            &Grep,
            json!({"pattern": "hello", "-i": true, "output_mode": "count", "glob": "*.rs"}),
        )
        .await;
    let lines = rel_lines(&p, &out.content);
    assert_eq!(
        lines[..3],
        [".hidden/config.rs:1", "src/lib.rs:2", "src/main.rs:1"]
    );
    assert!(
        out.content
            .ends_with("Found 4 matching lines across 3 files."),
        "{}",
        out.content
    );
    assert_eq!(out.detail.unwrap()["numMatches"], 4);

    let out = p
        .call(&Grep, json!({"pattern": "hello", "type": "md"}))
        .await;
    assert_eq!(
        rel_lines(&p, &out.content),
        ["Found 1 file", "docs/readme.md"]
    );

    let out = p
        .call(
            &Grep,
            json!({"pattern": "hello", "-i": true, "head_limit": 2, "offset": 1}),
        )
        .await;
    let lines = rel_lines(&p, &out.content);
    assert_eq!(lines[..3], ["Found 4 files", "src/main.rs", "src/lib.rs"]);
    assert!(out.content.contains("1 more not shown"), "{}", out.content);
}

#[tokio::test]
async fn grep_without_matches_says_so() {
    let p = tree();
    let out = p.call(&Grep, json!({"pattern": "zzz_nothing"})).await;
    assert!(!out.is_error);
    assert_eq!(out.content, "No files found");
    let out = p
        .call(&Grep, json!({"pattern": "zzz", "output_mode": "content"}))
        .await;
    assert_eq!(out.content, "No matches found");
}

#[tokio::test]
async fn grep_invalid_input_is_named() {
    let p = tree();
    for (input, says) in [
        (json!({}), "missing field `pattern`"),
        (
            json!({"pattern": "(unclosed"}),
            "`pattern`: not a valid regular expression",
        ),
        (
            json!({"pattern": "a", "output_mode": "lines"}),
            "`output_mode`",
        ),
        (json!({"pattern": "a", "type": "klingon"}), "`type`"),
        (json!({"pattern": "a", "-A": -2}), "`-A`"),
        (
            json!({"pattern": "a", "head_limit": 0}),
            "`head_limit`: must be at least 1",
        ),
        (json!({"pattern": "a", "glob": "a[b"}), "`glob`"),
    ] {
        let out = p.call(&Grep, input.clone()).await;
        assert!(out.is_error, "{input}");
        assert!(out.content.contains(says), "{input}: {}", out.content);
    }
    let out = p.call(&Grep, json!({"pattern": "a", "path": "nope"})).await;
    assert!(out.is_error && out.content.contains("Path does not exist"));
}
