//! Read, Write and Edit against a temp project: numbered output, paging and refusals;
//! the read-before-change rule; `before_edit` called exactly once per changing call and
//! before the file changed; line counts; every error case leaves the file untouched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_support;

use serde_json::json;
use strata_agent::tools::{Edit, Read, Write};
use tools_support::{EditCall, Project};

async fn read(p: &Project, rel: &str) {
    let out = p.call(&Read, json!({"file_path": p.path(rel)})).await;
    assert!(!out.is_error, "{out:?}");
}

#[tokio::test]
async fn read_numbers_lines_like_cat_n() {
    let p = Project::new();
    let f = p.write("a.txt", "alpha\nbeta\r\ngamma");
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(!out.is_error);
    assert_eq!(out.content, "     1→alpha\n     2→beta\n     3→gamma");
    let d = out.detail.unwrap();
    assert_eq!(d["type"], "text");
    assert_eq!(d["file"]["numLines"], 3);
    assert_eq!(d["file"]["totalLines"], 3);
    assert_eq!(d["file"]["content"], "alpha\nbeta\ngamma");
}

#[tokio::test]
async fn read_offset_and_limit_page_through_the_file() {
    let p = Project::new();
    let body: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    let f = p.write("ten.txt", &body);
    let out = p
        .call(&Read, json!({"file_path": f, "offset": 3, "limit": 2}))
        .await;
    assert!(
        out.content
            .starts_with("     3→line 3\n     4→line 4\n\n[Showing lines 3-4 of 10."),
        "{}",
        out.content
    );
    let out = p.call(&Read, json!({"file_path": f, "offset": 50})).await;
    assert!(!out.is_error);
    assert!(
        out.content
            .contains("has 10 lines; offset 50 is past its end"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn read_truncates_long_lines() {
    let p = Project::new();
    let f = p.write("long.txt", &format!("{}\nshort\n", "x".repeat(2500)));
    let out = p.call(&Read, json!({"file_path": f})).await;
    let first = out.content.lines().next().unwrap();
    assert!(
        first.ends_with("… [line truncated, 500 more characters]"),
        "{first}"
    );
    assert!(out.content.contains("     2→short"));
}

#[tokio::test]
async fn read_refuses_directories_missing_files_binaries_and_relative_paths() {
    let p = Project::new();
    std::fs::create_dir(p.path("dir")).unwrap();
    std::fs::write(p.path("img.bin"), b"\x89PNG\0\0\x01").unwrap();
    for (input, says) in [
        (
            json!({"file_path": p.path("dir")}),
            "is a directory, not a file",
        ),
        (
            json!({"file_path": p.path("nope.txt")}),
            "File does not exist",
        ),
        (
            json!({"file_path": p.path("img.bin")}),
            "is a binary file (7 bytes)",
        ),
        (
            json!({"file_path": "relative.txt"}),
            "`file_path`: must be an absolute path",
        ),
        (
            json!({"file_path": p.path("a"), "limit": 0}),
            "`limit`: must be at least 1",
        ),
        (json!({"file_path": p.path("a"), "offset": -1}), "`offset`"),
        (json!({}), "missing field `file_path`"),
    ] {
        let out = p.call(&Read, input.clone()).await;
        assert!(out.is_error, "{input}");
        assert!(out.content.contains(says), "{input}: {}", out.content);
    }
}

#[tokio::test]
async fn read_of_an_empty_file_says_so() {
    let p = Project::new();
    let f = p.write("empty.txt", "");
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(!out.is_error);
    assert!(out.content.contains("exists but is empty"));
}

#[tokio::test]
async fn write_creates_parent_dirs_and_counts_lines() {
    let p = Project::new();
    let f = p.path("new/deep/file.txt");
    let out = p
        .call(&Write, json!({"file_path": f, "content": "a\nb\nc\n"}))
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(p.read("new/deep/file.txt"), "a\nb\nc\n");
    assert_eq!((out.lines_added, out.lines_removed), (3, 0));
    assert!(out.content.contains("File created successfully"));
    assert_eq!(out.detail.unwrap()["type"], "create");
    assert_eq!(
        p.hooks.edit_calls(),
        [EditCall {
            path: f,
            content_before: None
        }],
        "before_edit once, before the file existed"
    );
}

#[tokio::test]
async fn write_over_an_existing_file_requires_reading_it_first() {
    let p = Project::new();
    let f = p.write("a.txt", "old\n");
    let out = p
        .call(&Write, json!({"file_path": f, "content": "new\n"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("has not been read yet"),
        "{}",
        out.content
    );
    assert_eq!(p.read("a.txt"), "old\n", "untouched");
    assert!(
        p.hooks.edit_calls().is_empty(),
        "no backup for a refused write"
    );

    read(&p, "a.txt").await;
    let out = p
        .call(&Write, json!({"file_path": f, "content": "new\nmore\n"}))
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(p.read("a.txt"), "new\nmore\n");
    assert_eq!((out.lines_added, out.lines_removed), (2, 1));
    let d = out.detail.unwrap();
    assert_eq!(d["type"], "update");
    assert_eq!(d["originalFile"], "old\n");
    assert_eq!(
        p.hooks.edit_calls(),
        [EditCall {
            path: f,
            content_before: Some("old\n".into())
        }]
    );
}

#[tokio::test]
async fn write_refuses_a_file_changed_since_it_was_read() {
    let p = Project::new();
    let f = p.write("a.txt", "v1\n");
    read(&p, "a.txt").await;
    std::fs::write(&f, "someone else's v2, longer\n").unwrap();
    let out = p
        .call(&Write, json!({"file_path": f, "content": "mine\n"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("modified after it was last read"),
        "{}",
        out.content
    );
    assert_eq!(p.read("a.txt"), "someone else's v2, longer\n");
}

#[tokio::test]
async fn write_refuses_a_directory_and_bad_input() {
    let p = Project::new();
    std::fs::create_dir(p.path("d")).unwrap();
    let out = p
        .call(&Write, json!({"file_path": p.path("d"), "content": "x"}))
        .await;
    assert!(
        out.is_error && out.content.contains("is a directory"),
        "{}",
        out.content
    );
    let out = p.call(&Write, json!({"file_path": p.path("x")})).await;
    assert!(
        out.content.contains("missing field `content`"),
        "{}",
        out.content
    );
    let out = p
        .call(&Write, json!({"file_path": "x", "content": ""}))
        .await;
    assert!(
        out.content
            .contains("`file_path`: must be an absolute path")
    );
}

#[tokio::test]
async fn edit_replaces_a_unique_string_and_backs_up_first() {
    let p = Project::new();
    let f = p.write("m.rs", "fn a() {}\nfn b() {}\n");
    read(&p, "m.rs").await;
    let out = p
        .call(
            &Edit,
            json!({"file_path": f, "old_string": "fn b() {}", "new_string": "fn b() {\n    a();\n}"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(p.read("m.rs"), "fn a() {}\nfn b() {\n    a();\n}\n");
    assert_eq!((out.lines_added, out.lines_removed), (3, 1));
    assert_eq!(
        p.hooks.edit_calls(),
        [EditCall {
            path: f.clone(),
            content_before: Some("fn a() {}\nfn b() {}\n".into())
        }]
    );
    let d = out.detail.unwrap();
    assert_eq!(d["oldString"], "fn b() {}");
    assert_eq!(d["replaceAll"], false);
    assert!(d["structuredPatch"][0]["lines"].as_array().unwrap().len() >= 4);

    // A second edit needs no new Read: the tool's own write is recorded.
    let out = p
        .call(
            &Edit,
            json!({"file_path": f, "old_string": "fn a() {}", "new_string": "fn a() { }"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(p.hooks.edit_calls().len(), 2, "once per edit call");
}

#[tokio::test]
async fn edit_errors_leave_the_file_and_history_untouched() {
    let p = Project::new();
    let original = "x = 1\nx = 1\ny = 2\n";
    let f = p.write("c.py", original);
    read(&p, "c.py").await;
    for (input, says) in [
        (
            json!({"file_path": f, "old_string": "z = 3", "new_string": "z = 4"}),
            "String to replace not found",
        ),
        (
            json!({"file_path": f, "old_string": "x = 1", "new_string": "x = 2"}),
            "Found 2 matches of old_string",
        ),
        (
            json!({"file_path": f, "old_string": "y = 2", "new_string": "y = 2"}),
            "`new_string`: is identical to old_string",
        ),
        (
            json!({"file_path": f, "old_string": "", "new_string": "z"}),
            "old_string is empty but",
        ),
        (
            json!({"file_path": p.path("missing.py"), "old_string": "a", "new_string": "b"}),
            "File does not exist",
        ),
        (
            json!({"file_path": f, "old_string": "a"}),
            "missing field `new_string`",
        ),
        (
            json!({"file_path": f, "old_string": "a", "new_string": "b", "replace_all": "yes"}),
            "`replace_all`",
        ),
    ] {
        let out = p.call(&Edit, input.clone()).await;
        assert!(out.is_error, "{input}");
        assert!(out.content.contains(says), "{input}: {}", out.content);
        assert_eq!(p.read("c.py"), original);
    }
    assert!(p.hooks.edit_calls().is_empty());
}

#[tokio::test]
async fn edit_replace_all_replaces_every_occurrence() {
    let p = Project::new();
    let f = p.write("c.py", "x = 1\nx = 1\n");
    read(&p, "c.py").await;
    let out = p
        .call(
            &Edit,
            json!({"file_path": f, "old_string": "x = 1", "new_string": "x = 9", "replace_all": true}),
        )
        .await;
    assert!(!out.is_error);
    assert_eq!(p.read("c.py"), "x = 9\nx = 9\n");
    assert_eq!((out.lines_added, out.lines_removed), (2, 2));
}

#[tokio::test]
async fn edit_requires_a_fresh_read() {
    let p = Project::new();
    let f = p.write("a.txt", "one\n");
    let out = p
        .call(
            &Edit,
            json!({"file_path": f, "old_string": "one", "new_string": "two"}),
        )
        .await;
    assert!(out.is_error && out.content.contains("has not been read yet"));
    read(&p, "a.txt").await;
    std::fs::write(&f, "one, edited elsewhere\n").unwrap();
    let out = p
        .call(
            &Edit,
            json!({"file_path": f, "old_string": "one", "new_string": "two"}),
        )
        .await;
    assert!(out.is_error && out.content.contains("modified after it was last read"));
    assert_eq!(p.read("a.txt"), "one, edited elsewhere\n");
}

#[tokio::test]
async fn edit_with_empty_old_string_creates_a_file() {
    let p = Project::new();
    let f = p.path("fresh/new.txt");
    let out = p
        .call(
            &Edit,
            json!({"file_path": f, "old_string": "", "new_string": "hello\n"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(p.read("fresh/new.txt"), "hello\n");
    assert_eq!(out.lines_added, 1);
    assert_eq!(
        p.hooks.edit_calls(),
        [EditCall {
            path: f,
            content_before: None
        }]
    );
}

#[tokio::test]
async fn failing_file_history_hook_aborts_the_change() {
    let p = Project::with_hooks(|r| r.fail_before_edit = true);
    let f = p.write("a.txt", "keep\n");
    read(&p, "a.txt").await;
    let out = p
        .call(
            &Edit,
            json!({"file_path": f, "old_string": "keep", "new_string": "lose"}),
        )
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("backup disk is full"),
        "{}",
        out.content
    );
    assert_eq!(p.read("a.txt"), "keep\n");
    let out = p
        .call(
            &Write,
            json!({"file_path": p.path("b.txt"), "content": "x"}),
        )
        .await;
    assert!(out.is_error);
    assert!(!p.path("b.txt").exists());
}
