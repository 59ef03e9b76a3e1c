//! Large tool outputs are stored beside the transcript, which keeps a reference and a
//! preview (issue 5 part 2).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use strata_session::layout::SessionLayout;
use strata_session::writer::tool_results::{
    INLINE_LIMIT_BYTES, REFERENCE_CLOSE, REFERENCE_OPEN, ToolResultError, persist_tool_output,
};

#[test]
fn small_outputs_stay_inline_and_store_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = SessionLayout::new(tmp.path(), Path::new("/w/p"), "s1");
    let out = persist_tool_output(&layout, "toolu_1", "hello\n").unwrap();
    assert_eq!(out.content, "hello\n");
    assert_eq!(out.stored_at, None);
    assert!(!layout.tool_results_dir().exists());
    let exactly = "a".repeat(INLINE_LIMIT_BYTES);
    assert_eq!(
        persist_tool_output(&layout, "toolu_1", &exactly)
            .unwrap()
            .content,
        exactly
    );
}

#[test]
fn large_output_is_stored_whole_and_referenced_with_a_preview() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = SessionLayout::new(tmp.path(), Path::new("/w/p"), "s1");
    let output: String = (0..5_000)
        .map(|n| format!("line {n}: some test output\n"))
        .collect();
    assert!(output.len() > INLINE_LIMIT_BYTES);
    let out = persist_tool_output(&layout, "toolu_01AbC-d_e", &output).unwrap();

    let path = layout.tool_result("toolu_01AbC-d_e");
    assert_eq!(out.stored_at.as_deref(), Some(path.as_path()));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        output,
        "stored byte for byte"
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );

    assert!(
        out.content
            .starts_with(&format!("{REFERENCE_OPEN}\nOutput too large ("))
    );
    assert!(
        out.content
            .contains(&format!("Full output saved to: {}\n", path.display()))
    );
    assert!(
        out.content
            .contains("\n\nPreview (first 2KB):\nline 0: some test output\n")
    );
    assert!(out.content.ends_with(&format!("\n...\n{REFERENCE_CLOSE}")));
    assert!(
        out.content.len() < 2_048 + 400,
        "the transcript stays small: {}",
        out.content.len()
    );
    let leftover: Vec<_> = std::fs::read_dir(layout.tool_results_dir())
        .unwrap()
        .collect();
    assert_eq!(leftover.len(), 1, "no temp file is left behind");
}

#[test]
fn an_id_that_is_not_a_file_name_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = SessionLayout::new(tmp.path(), Path::new("/w/p"), "s1");
    let big = "x".repeat(INLINE_LIMIT_BYTES + 1);
    let err = persist_tool_output(&layout, "../../escape", &big).unwrap_err();
    assert!(matches!(err, ToolResultError::BadId { .. }));
    assert!(err.to_string().contains("../../escape"));
}
