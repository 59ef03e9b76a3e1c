//! Read of images, PDFs and notebooks, and NotebookEdit (issue 18, item 7), against a
//! temp project: what the model receives (image and document blocks, notebook cells with
//! outputs), the API's limits (images scaled to 2,000 pixels, PDFs over 10 pages read
//! with `pages`), every bad input a clear error, and NotebookEdit under the
//! read-before-write rule with `before_edit` called before the notebook changes and a
//! notebook that does not parse never written.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tools_support;

use std::io::Cursor;

use base64::Engine as _;
use serde_json::{Value, json};
use strata_agent::tools::{NotebookEdit, Read, ReadStamp, ToolOutput};
use strata_protocol::message::ContentBlock;
use tools_support::Project;

fn png(width: u32, height: u32) -> Vec<u8> {
    // Noise, so the PNG does not compress to nothing.
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        let v = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) as u8;
        image::Rgb([v, v.wrapping_add(85), v.wrapping_add(170)])
    });
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(width, height, image::Rgb([200, 10, 10]));
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Jpeg)
        .unwrap();
    out.into_inner()
}

/// A PDF of `pages` pages, each saying its number.
fn pdf(pages: usize) -> Vec<u8> {
    use lopdf::content::{Content, Operation};
    use lopdf::{Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier",
    });
    let resources_id = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
    });
    let mut kids: Vec<Object> = Vec::new();
    for n in 1..=pages {
        let content = Content {
            operations: vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 24.into()]),
                Operation::new("Td", vec![72.into(), 700.into()]),
                Operation::new("Tj", vec![Object::string_literal(format!("Page {n}"))]),
                Operation::new("ET", vec![]),
            ],
        };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        });
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources_id,
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

fn write_bytes(p: &Project, rel: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = p.path(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The one attachment of a result.
fn attachment(out: &ToolOutput) -> &ContentBlock {
    let blocks = out.attachments.as_ref().expect("an attachment");
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    &blocks[0]
}

fn image_source(block: &ContentBlock) -> (String, Vec<u8>) {
    let ContentBlock::Image(image) = block else {
        panic!("not an image block: {block:?}");
    };
    assert_eq!(image.source["type"], "base64");
    let data = base64::engine::general_purpose::STANDARD
        .decode(image.source["data"].as_str().unwrap())
        .unwrap();
    (
        image.source["media_type"].as_str().unwrap().to_owned(),
        data,
    )
}

fn document_bytes(block: &ContentBlock) -> Vec<u8> {
    let ContentBlock::Unknown(map) = block else {
        panic!("not a document block: {block:?}");
    };
    assert_eq!(map["type"], "document");
    assert_eq!(map["source"]["media_type"], "application/pdf");
    base64::engine::general_purpose::STANDARD
        .decode(map["source"]["data"].as_str().unwrap())
        .unwrap()
}

#[tokio::test]
async fn read_of_a_png_sends_it_as_an_image_block_unchanged() {
    let p = Project::new();
    let bytes = png(40, 30);
    let f = write_bytes(&p, "shot.png", &bytes);
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(!out.is_error, "{out:?}");
    let (media, data) = image_source(attachment(&out));
    assert_eq!(media, "image/png");
    assert_eq!(data, bytes, "a small image is sent as it is");
    assert!(out.content.contains("40×30"), "{}", out.content);
    let detail = out.detail.unwrap();
    assert_eq!(detail["type"], "image");
    assert_eq!(detail["file"]["dimensions"]["displayWidth"], 40);
    assert!(
        detail.to_string().len() < 1000,
        "the detail leaves the data out"
    );
}

#[tokio::test]
async fn a_large_image_is_scaled_to_fit_2000_pixels_a_side() {
    let p = Project::new();
    let f = write_bytes(&p, "wide.png", &png(2600, 650));
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(!out.is_error, "{out:?}");
    let (media, data) = image_source(attachment(&out));
    let sent = image::load_from_memory(&data).unwrap();
    assert_eq!((sent.width(), sent.height()), (2000, 500));
    assert!(media == "image/png" || media == "image/jpeg", "{media}");
    assert!(data.len().div_ceil(3) * 4 <= 5 * 1024 * 1024);
    assert!(
        out.content.contains("scaled to 2000×500"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_misnamed_image_is_sent_with_the_media_type_of_its_bytes() {
    let p = Project::new();
    let f = write_bytes(&p, "photo.png", &jpeg(16, 16));
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(image_source(attachment(&out)).0, "image/jpeg");
}

#[tokio::test]
async fn a_file_named_as_an_image_that_is_not_one_is_a_clear_error() {
    let p = Project::new();
    let f = p.write("fake.webp", "just text");
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("not a PNG, JPEG, GIF or WebP"),
        "{}",
        out.content
    );
    assert!(out.attachments.is_none());
}

#[tokio::test]
async fn an_image_past_the_file_cap_is_refused_before_it_is_read() {
    let p = Project::new();
    let f = p.path("huge.png");
    std::fs::File::create(&f)
        .unwrap()
        .set_len(31 * 1024 * 1024)
        .unwrap();
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(out.is_error);
    assert!(out.content.contains("at most 30 MB"), "{}", out.content);
}

#[tokio::test]
async fn read_of_a_short_pdf_sends_it_as_a_document_block() {
    let p = Project::new();
    let bytes = pdf(3);
    let f = write_bytes(&p, "paper.pdf", &bytes);
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(document_bytes(attachment(&out)), bytes);
    let detail = out.detail.unwrap();
    assert_eq!(detail["type"], "pdf");
    assert_eq!(detail["file"]["totalPages"], 3);
    assert!(out.content.contains("3 page(s)"), "{}", out.content);
}

#[tokio::test]
async fn a_long_pdf_is_read_by_pages_and_only_those_pages_are_sent() {
    let p = Project::new();
    let f = write_bytes(&p, "book.pdf", &pdf(12));
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("12 pages") && out.content.contains("`pages`"),
        "{}",
        out.content
    );

    let out = p.call(&Read, json!({"file_path": f, "pages": "2-4"})).await;
    assert!(!out.is_error, "{out:?}");
    let sent = lopdf::Document::load_mem(&document_bytes(attachment(&out))).unwrap();
    assert_eq!(sent.get_pages().len(), 3);
    assert_eq!(out.detail.unwrap()["file"]["pages"], "2-4");

    let out = p.call(&Read, json!({"file_path": f, "pages": "12"})).await;
    assert!(!out.is_error, "{out:?}");
    let out = p
        .call(&Read, json!({"file_path": f, "pages": "11-13"}))
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("past its end"), "{}", out.content);
    let out = p
        .call(&Read, json!({"file_path": f, "pages": "1-21"}))
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("at most 20"), "{}", out.content);
    let out = p.call(&Read, json!({"file_path": f, "pages": "two"})).await;
    assert!(out.content.contains("not a page range"), "{}", out.content);
}

#[tokio::test]
async fn pages_applies_to_pdfs_only_and_a_blank_value_is_ignored() {
    let p = Project::new();
    let f = p.write("a.txt", "alpha\n");
    let out = p.call(&Read, json!({"file_path": f, "pages": "1-2"})).await;
    assert!(out.is_error);
    assert!(out.content.contains("PDF files only"), "{}", out.content);
    let out = p.call(&Read, json!({"file_path": f, "pages": ""})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.content, "     1→alpha");
}

#[tokio::test]
async fn a_broken_pdf_is_a_clear_error() {
    let p = Project::new();
    let f = p.write("broken.pdf", "%PDF-1.4\nthis is not really a pdf\n");
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("does not parse as a PDF"),
        "{}",
        out.content
    );
}

/// A notebook with a code cell (outputs: stream, result, image, error) and a markdown
/// cell, nbformat 4.5 with ids, written as Jupyter writes it.
fn notebook() -> Value {
    json!({
        "cells": [
            {
                "cell_type": "code",
                "execution_count": 3,
                "id": "a1",
                "metadata": {},
                "outputs": [
                    {"name": "stdout", "output_type": "stream", "text": ["hello\n"]},
                    {"data": {"text/plain": ["42"]}, "execution_count": 3, "metadata": {}, "output_type": "execute_result"},
                    {"data": {"image/png": base64::engine::general_purpose::STANDARD.encode(png(8, 8)), "text/plain": ["<Figure>"]}, "metadata": {}, "output_type": "display_data"},
                    {"ename": "ValueError", "evalue": "bad", "output_type": "error", "traceback": ["\u{1b}[0;31mValueError\u{1b}[0m: bad"]}
                ],
                "source": ["print('hello')\n", "6 * 7"]
            },
            {
                "cell_type": "markdown",
                "id": "b2",
                "metadata": {},
                "source": ["# Notes\n", "Some text."]
            }
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5
    })
}

/// The notebook as Jupyter lays it out: one-space indent, a final newline.
fn jupyter_text(v: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(v, &mut ser).unwrap();
    String::from_utf8(out).unwrap() + "\n"
}

#[tokio::test]
async fn read_of_a_notebook_shows_cells_with_their_outputs_and_attaches_plots() {
    let p = Project::new();
    let f = p.write("analysis.ipynb", &jupyter_text(&notebook()));
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(!out.is_error, "{out:?}");
    let c = &out.content;
    assert!(
        c.contains(
            "<cell id=\"a1\" type=\"code\" language=\"python\" execution_count=\"3\">\nprint('hello')\n6 * 7\n</cell>"
        ),
        "{c}"
    );
    assert!(c.contains("<outputs cell=\"a1\">\nhello\n42\n"), "{c}");
    assert!(c.contains("ValueError: bad"), "{c}");
    assert!(!c.contains('\u{1b}'), "colour codes are removed: {c:?}");
    assert!(
        c.contains("<cell id=\"b2\" type=\"markdown\">\n# Notes\nSome text.\n</cell>"),
        "{c}"
    );
    assert_eq!(image_source(attachment(&out)).0, "image/png");
    assert_eq!(out.detail.unwrap()["file"]["cells"], 2);
}

#[tokio::test]
async fn a_notebook_that_is_not_json_is_an_error_with_line_and_column() {
    let p = Project::new();
    let f = p.write(
        "bad.ipynb",
        "{\n \"cells\": [\n  {\"cell_type\": \"code\",,}\n ]\n}\n",
    );
    let out = p.call(&Read, json!({"file_path": f})).await;
    assert!(out.is_error);
    let expected = format!("{}:3:", f.display());
    assert!(out.content.starts_with(&expected), "{}", out.content);
}

#[tokio::test]
async fn notebook_edit_needs_the_notebook_read_first() {
    let p = Project::new();
    let text = jupyter_text(&notebook());
    let f = p.write("n.ipynb", &text);
    let out = p
        .call(
            &NotebookEdit,
            json!({"notebook_path": f, "cell_id": "a1", "new_source": "x = 1"}),
        )
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("has not been read yet"),
        "{}",
        out.content
    );
    assert_eq!(p.read("n.ipynb"), text);
    assert!(p.hooks.edit_calls().is_empty());
}

#[tokio::test]
async fn notebook_edit_replaces_a_cell_clears_its_outputs_and_keeps_the_rest() {
    let p = Project::new();
    let text = jupyter_text(&notebook());
    let f = p.write("n.ipynb", &text);
    assert!(!p.call(&Read, json!({"file_path": f})).await.is_error);
    let out = p
        .call(
            &NotebookEdit,
            json!({"notebook_path": f, "cell_id": "a1", "new_source": "x = 1\nprint(x)"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    let after: Value = serde_json::from_str(&p.read("n.ipynb")).unwrap();
    let cell = &after["cells"][0];
    assert_eq!(cell["source"], json!(["x = 1\n", "print(x)"]));
    assert_eq!(cell["outputs"], json!([]));
    assert_eq!(cell["execution_count"], Value::Null);
    assert_eq!(cell["id"], "a1");
    // Everything else is as it was, laid out as Jupyter lays it out.
    let mut expected = notebook();
    expected["cells"][0]["source"] = json!(["x = 1\n", "print(x)"]);
    expected["cells"][0]["outputs"] = json!([]);
    expected["cells"][0]["execution_count"] = Value::Null;
    assert_eq!(p.read("n.ipynb"), jupyter_text(&expected));
    // Backed up once, before the change.
    let edits = p.hooks.edit_calls();
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0].content_before.as_deref(), Some(text.as_str()));
    let detail = out.detail.unwrap();
    assert_eq!(detail["edit_mode"], "replace");
    assert_eq!(detail["cell_id"], "a1");
    assert_eq!(detail["language"], "python");
    // The write counts as a read: a second edit needs no new Read.
    let again = p
        .call(
            &NotebookEdit,
            json!({"notebook_path": f, "cell_id": "b2", "new_source": "# Title", "cell_type": "markdown"}),
        )
        .await;
    assert!(!again.is_error, "{again:?}");
}

#[tokio::test]
async fn notebook_edit_inserts_after_a_cell_and_deletes_one() {
    let p = Project::new();
    let f = p.write("n.ipynb", &jupyter_text(&notebook()));
    assert!(!p.call(&Read, json!({"file_path": f})).await.is_error);
    let out = p
        .call(
            &NotebookEdit,
            json!({"notebook_path": f, "cell_id": "a1", "new_source": "import os\n", "cell_type": "code", "edit_mode": "insert"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    let after: Value = serde_json::from_str(&p.read("n.ipynb")).unwrap();
    let cells = after["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 3);
    assert_eq!(cells[1]["source"], json!(["import os\n"]));
    assert_eq!(cells[1]["cell_type"], "code");
    assert_eq!(cells[1]["outputs"], json!([]));
    let new_id = cells[1]["id"].as_str().unwrap().to_owned();
    assert_eq!(new_id.len(), 8, "nbformat 4.5 cells get an id");
    assert_eq!(out.detail.unwrap()["cell_id"], new_id.as_str());

    // At the start without a cell id.
    let out = p
        .call(
            &NotebookEdit,
            json!({"notebook_path": f, "new_source": "# Top", "cell_type": "markdown", "edit_mode": "insert"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    let after: Value = serde_json::from_str(&p.read("n.ipynb")).unwrap();
    assert_eq!(after["cells"][0]["source"], json!(["# Top"]));
    assert!(after["cells"][0].get("outputs").is_none());

    let out = p
        .call(
            &NotebookEdit,
            json!({"notebook_path": f, "cell_id": "b2", "new_source": "", "edit_mode": "delete"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    let after: Value = serde_json::from_str(&p.read("n.ipynb")).unwrap();
    let ids: Vec<&str> = after["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert!(!ids.contains(&"b2"), "{ids:?}");
    assert_eq!(ids.len(), 3);
}

#[tokio::test]
async fn notebook_edit_finds_cells_of_old_notebooks_by_position() {
    let p = Project::new();
    let mut old = notebook();
    for cell in old["cells"].as_array_mut().unwrap() {
        cell.as_object_mut().unwrap().remove("id");
    }
    old["nbformat_minor"] = json!(4);
    let f = p.write("old.ipynb", &jupyter_text(&old));
    let read = p.call(&Read, json!({"file_path": f})).await;
    assert!(
        read.content
            .contains("<cell id=\"cell-1\" type=\"markdown\">"),
        "{}",
        read.content
    );
    let out = p
        .call(
            &NotebookEdit,
            json!({"notebook_path": f, "cell_id": "cell-1", "new_source": "changed"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    let after: Value = serde_json::from_str(&p.read("old.ipynb")).unwrap();
    assert_eq!(after["cells"][1]["source"], json!(["changed"]));
    let out = p
        .call(
            &NotebookEdit,
            json!({"notebook_path": f, "new_source": "x", "cell_type": "code", "edit_mode": "insert"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    let after: Value = serde_json::from_str(&p.read("old.ipynb")).unwrap();
    assert!(
        after["cells"][0].get("id").is_none(),
        "no ids in a 4.4 notebook"
    );
}

#[tokio::test]
async fn notebook_edit_refuses_bad_inputs_without_touching_the_notebook() {
    let p = Project::new();
    let text = jupyter_text(&notebook());
    let f = p.write("n.ipynb", &text);
    assert!(!p.call(&Read, json!({"file_path": f})).await.is_error);
    let cases = [
        (
            json!({"notebook_path": f, "new_source": "x", "edit_mode": "insert"}),
            "`cell_type`",
        ),
        (json!({"notebook_path": f, "new_source": "x"}), "`cell_id`"),
        (
            json!({"notebook_path": f, "cell_id": "nope", "new_source": "x"}),
            "no cell \"nope\". Its cells: a1, b2",
        ),
        (
            json!({"notebook_path": f, "cell_id": "a1", "new_source": "x", "edit_mode": "append"}),
            "`edit_mode`",
        ),
        (
            json!({"notebook_path": f, "cell_id": "a1", "new_source": "x", "cell_type": "raw"}),
            "`cell_type`",
        ),
        (
            json!({"notebook_path": p.path("a.txt"), "cell_id": "a1", "new_source": "x"}),
            ".ipynb",
        ),
        (
            json!({"notebook_path": "n.ipynb", "cell_id": "a1", "new_source": "x"}),
            "absolute",
        ),
    ];
    for (input, needle) in cases {
        let out = p.call(&NotebookEdit, input.clone()).await;
        assert!(out.is_error, "{input}");
        assert!(out.content.contains(needle), "{input}: {}", out.content);
    }
    assert_eq!(p.read("n.ipynb"), text);
    assert!(p.hooks.edit_calls().is_empty());
}

#[tokio::test]
async fn a_notebook_that_does_not_parse_is_never_written() {
    let p = Project::new();
    let broken = "{\n \"cells\": [\n  {\"cell_type\": \"code\" \"source\": []}\n ]\n}\n";
    let f = p.write("broken.ipynb", broken);
    // As if the notebook had been read (Read itself refuses to show it).
    let meta = std::fs::metadata(&f).unwrap();
    p.ctx.record_read(f.clone(), ReadStamp::of(&meta));
    let out = p
        .call(
            &NotebookEdit,
            json!({"notebook_path": f, "cell_id": "cell-0", "new_source": "x"}),
        )
        .await;
    assert!(out.is_error);
    let expected = format!("{}:3:", f.display());
    assert!(out.content.starts_with(&expected), "{}", out.content);
    assert!(out.content.contains("not changed"), "{}", out.content);
    assert_eq!(p.read("broken.ipynb"), broken);
    assert!(p.hooks.edit_calls().is_empty());
}
