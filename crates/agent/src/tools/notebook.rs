//! Jupyter notebooks (`.ipynb`, nbformat 4): reading one as cells with their outputs (the
//! Read tool) and the document NotebookEdit changes.
//!
//! A notebook is JSON; it is parsed with `serde_json` keeping the file's key order, so
//! an edit changes only the cell it meant (Jupyter's own layout: one-space indent, a
//! final newline, which are kept as the file had them). A file that does not parse is
//! an error with its line and column and is never written. Cells are named by their
//! `id` (nbformat 4.5) or, in older notebooks without ids, by `cell-N` (N counted from
//! 0), the names Read shows and NotebookEdit takes.
//!
//! Read shows each cell as `<cell id="…" type="code">source</cell>` followed by its
//! outputs: stream text, results and display data as text (their `text/plain`), errors
//! with their traceback (terminal colour codes removed), and PNG/JPEG outputs as image
//! blocks after the text, so the model sees a plot as the user does.

use std::path::Path;

use serde_json::{Map, Value};
use strata_protocol::message::ContentBlock;

use super::read_media::{MAX_IMAGE_BASE64_BYTES, image_block};

/// The most text shown for one cell's outputs.
const MAX_OUTPUT_CHARS_PER_CELL: usize = 10_000;
/// The most images taken from a notebook's outputs.
const MAX_OUTPUT_IMAGES: usize = 20;

/// A parsed notebook.
#[derive(Debug, Clone)]
pub(crate) struct Notebook {
    /// The document, keys in file order; its `cells` entry is a placeholder for
    /// [`Notebook::cells`] (so the key keeps its place).
    root: Map<String, Value>,
    /// The cells, each an object.
    cells: Vec<Value>,
    /// The indent of the file's JSON (Jupyter writes one space).
    indent: usize,
    /// Whether the file ended with a newline.
    final_newline: bool,
}

impl Notebook {
    /// Parses `text`, the content of `path`; the error names the file, line and column.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Self, String> {
        let shown = path.display();
        let value: Value = serde_json::from_str(text).map_err(|e| {
            format!(
                "{shown}:{}:{}: the notebook is not valid JSON ({e}); fix the file (or open \
                 it in Jupyter) and try again",
                e.line(),
                e.column()
            )
        })?;
        let Value::Object(mut root) = value else {
            return Err(format!(
                "{shown}:1:1: not a Jupyter notebook (the file is JSON but not an object)"
            ));
        };
        let cells = match root.get_mut("cells").map(Value::take) {
            Some(Value::Array(cells)) => cells,
            _ => {
                return Err(format!(
                    "{shown}: not a Jupyter notebook (nbformat 4): it has no `cells` list"
                ));
            }
        };
        if let Some(i) = cells.iter().position(|c| !c.is_object()) {
            return Err(format!(
                "{shown}: not a Jupyter notebook: cell {i} is not an object"
            ));
        }
        let indent = text
            .lines()
            .nth(1)
            .map_or(1, |l| l.len() - l.trim_start_matches(' ').len())
            .clamp(1, 8);
        Ok(Self {
            root,
            cells,
            indent,
            final_newline: text.ends_with('\n'),
        })
    }

    /// The cells (each an object: [`Notebook::parse`] checked).
    pub(crate) fn cells(&self) -> &[Value] {
        &self.cells
    }

    /// The cells, to change.
    pub(crate) fn cells_mut(&mut self) -> &mut Vec<Value> {
        &mut self.cells
    }

    /// The notebook's programming language (`python` when it does not say).
    pub(crate) fn language(&self) -> String {
        let meta = self.root.get("metadata");
        meta.and_then(|m| m.pointer("/language_info/name"))
            .or_else(|| meta.and_then(|m| m.pointer("/kernelspec/language")))
            .and_then(Value::as_str)
            .unwrap_or("python")
            .to_owned()
    }

    /// Whether cells carry ids (nbformat 4.5 and later).
    pub(crate) fn has_cell_ids(&self) -> bool {
        let major = self
            .root
            .get("nbformat")
            .and_then(Value::as_u64)
            .unwrap_or(4);
        let minor = self
            .root
            .get("nbformat_minor")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        (major, minor) >= (4, 5) || self.cells.iter().any(|c| c.get("id").is_some())
    }

    /// The index of the cell `id` names: its `id`, else `cell-N`.
    pub(crate) fn find(&self, id: &str) -> Option<usize> {
        let cells = &self.cells;
        cells
            .iter()
            .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
            .or_else(|| {
                id.strip_prefix("cell-")
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|n| *n < cells.len())
            })
    }

    /// The file's text for this document, laid out as the file was.
    pub(crate) fn to_text(&self) -> Result<String, String> {
        let indent = " ".repeat(self.indent);
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        let root: Map<String, Value> = self
            .root
            .iter()
            .map(|(k, v)| {
                let v = if k == "cells" {
                    Value::Array(self.cells.clone())
                } else {
                    v.clone()
                };
                (k.clone(), v)
            })
            .collect();
        serde::Serialize::serialize(&root, &mut ser).map_err(|e| e.to_string())?;
        let mut text = String::from_utf8(out).map_err(|e| e.to_string())?;
        if self.final_newline {
            text.push('\n');
        }
        Ok(text)
    }
}

/// The name Read shows for cell `index`.
pub(crate) fn cell_name(cell: &Value, index: usize) -> String {
    cell.get("id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("cell-{index}"), str::to_owned)
}

/// A cell's `source` (a string or a list of lines) as one text.
pub(crate) fn source_text(cell: &Value) -> String {
    multiline(cell.get("source"))
}

/// Jupyter's multi-line strings: one string or a list of pieces.
fn multiline(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// `text` as Jupyter stores a source: lines, each but the last ending with `\n`.
pub(crate) fn source_lines(text: &str) -> Value {
    Value::Array(
        text.split_inclusive('\n')
            .map(|l| Value::String(l.to_owned()))
            .collect(),
    )
}

/// What Read shows of a notebook: the text, and the images of its outputs.
pub(crate) struct Rendered {
    /// The cells and their text outputs.
    pub(crate) text: String,
    /// Image outputs, as image blocks.
    pub(crate) images: Vec<ContentBlock>,
    /// How many cells.
    pub(crate) cells: usize,
}

/// Renders `nb` for the model; `redact` is applied to every text taken from it.
pub(crate) fn render(nb: &Notebook, redact: &dyn Fn(&str) -> String) -> Rendered {
    let mut text = String::new();
    let mut images = Vec::new();
    let mut skipped_images = 0usize;
    let language = nb.language();
    for (i, cell) in nb.cells().iter().enumerate() {
        let name = cell_name(cell, i);
        let kind = cell
            .get("cell_type")
            .and_then(Value::as_str)
            .unwrap_or("code");
        let mut attrs = format!("id=\"{name}\" type=\"{kind}\"");
        if kind == "code" {
            attrs.push_str(&format!(" language=\"{language}\""));
            if let Some(n) = cell.get("execution_count").and_then(Value::as_u64) {
                attrs.push_str(&format!(" execution_count=\"{n}\""));
            }
        }
        text.push_str(&format!("<cell {attrs}>\n"));
        let source = redact(&source_text(cell));
        text.push_str(&source);
        if !source.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("</cell>\n");
        let outputs = cell.get("outputs").and_then(Value::as_array);
        let mut shown = String::new();
        for output in outputs.into_iter().flatten() {
            output_text(output, &mut shown);
            for (mime, data) in output_images(output) {
                if images.len() < MAX_OUTPUT_IMAGES && data.len() <= MAX_IMAGE_BASE64_BYTES {
                    images.push(image_block(mime, data.replace(['\n', '\r'], "")));
                    shown.push_str(&format!("[image output: {mime}, attached]\n"));
                } else {
                    skipped_images += 1;
                }
            }
        }
        if !shown.is_empty() {
            let shown = redact(&shown);
            let cut: String = shown.chars().take(MAX_OUTPUT_CHARS_PER_CELL).collect();
            text.push_str(&format!("<outputs cell=\"{name}\">\n{cut}"));
            if cut.len() < shown.len() {
                text.push_str(&format!(
                    "\n[… outputs cut at {MAX_OUTPUT_CHARS_PER_CELL} characters]"
                ));
            }
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("</outputs>\n");
        }
    }
    if skipped_images > 0 {
        text.push_str(&format!(
            "[{skipped_images} image output(s) not attached: over {MAX_OUTPUT_IMAGES} images \
             or the API's size limit]\n"
        ));
    }
    Rendered {
        text,
        images,
        cells: nb.cells().len(),
    }
}

/// The text of one output, appended to `out`.
fn output_text(output: &Value, out: &mut String) {
    match output.get("output_type").and_then(Value::as_str) {
        Some("stream") => {
            let t = multiline(output.get("text"));
            if output.get("name").and_then(Value::as_str) == Some("stderr") {
                out.push_str("[stderr]\n");
            }
            push_line(out, &t);
        }
        Some("execute_result" | "display_data") => {
            let data = output.get("data");
            let plain = multiline(data.and_then(|d| d.get("text/plain")));
            if !plain.is_empty() {
                push_line(out, &plain);
            }
        }
        Some("error") => {
            let name = output
                .get("ename")
                .and_then(Value::as_str)
                .unwrap_or("Error");
            let value = output.get("evalue").and_then(Value::as_str).unwrap_or("");
            push_line(out, &format!("{name}: {value}"));
            if let Some(trace) = output.get("traceback").and_then(Value::as_array) {
                for line in trace.iter().filter_map(Value::as_str) {
                    push_line(out, &strip_ansi(line));
                }
            }
        }
        _ => {}
    }
}

/// The PNG and JPEG data of one output (base64, as Jupyter stores it).
fn output_images(output: &Value) -> Vec<(&'static str, String)> {
    let Some(data) = output.get("data") else {
        return Vec::new();
    };
    ["image/png", "image/jpeg"]
        .into_iter()
        .filter_map(|mime| {
            let b64 = multiline(data.get(mime));
            (!b64.is_empty()).then_some((mime, b64))
        })
        .collect()
}

fn push_line(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
}

/// `text` without terminal escape sequences (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nb(text: &str) -> Result<Notebook, String> {
        Notebook::parse(Path::new("/p/a.ipynb"), text)
    }

    #[test]
    fn a_notebook_that_is_not_json_names_line_and_column() {
        let e = nb("{\n \"cells\": [\n  {,\n ]\n}").unwrap_err();
        assert!(e.starts_with("/p/a.ipynb:3:4:"), "{e}");
        let e = nb("{\"nbformat\": 4}").unwrap_err();
        assert!(e.contains("no `cells` list"), "{e}");
        let e = nb("[1]").unwrap_err();
        assert!(e.contains("not an object"), "{e}");
    }

    #[test]
    fn cells_are_found_by_id_then_by_position() {
        let n = nb(r#"{"cells": [{"id": "abc", "cell_type": "code", "source": ""}, {"cell_type": "markdown", "source": ""}]}"#).unwrap();
        assert_eq!(n.find("abc"), Some(0));
        assert_eq!(n.find("cell-1"), Some(1));
        assert_eq!(n.find("cell-2"), None);
        assert_eq!(n.find("zzz"), None);
    }

    #[test]
    fn the_layout_of_the_file_is_kept() {
        let text = "{\n \"cells\": [],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";
        assert_eq!(nb(text).unwrap().to_text().unwrap(), text);
        let two = "{\n  \"cells\": [],\n  \"nbformat\": 4\n}";
        assert_eq!(nb(two).unwrap().to_text().unwrap(), two);
    }

    #[test]
    fn sources_are_stored_as_lines() {
        assert_eq!(source_lines("a\nb\n"), serde_json::json!(["a\n", "b\n"]));
        assert_eq!(source_lines("x = 1"), serde_json::json!(["x = 1"]));
        assert_eq!(strip_ansi("\u{1b}[0;31mValueError\u{1b}[0m"), "ValueError");
    }
}
