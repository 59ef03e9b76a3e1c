//! Read of images and PDFs: the file goes to the model as a content block of the tool
//! result (issue 18, item 7), as the reference agent's Read does.
//!
//! **Images** (PNG, JPEG, GIF, WebP) become an `image` block, base64. The Messages API
//! refuses an image over 5 MB (base64) and shrinks anything larger than about 2,000
//! pixels on a side anyway, so a larger image is decoded and scaled down here (the
//! `image` crate) to fit 2,000 × 2,000, kept in its format when that fits and written as
//! JPEG otherwise; one that still does not fit is an error saying so. The format is
//! taken from the bytes, not the name: the API rejects a block whose media type does not
//! match its data. Files past [`MAX_IMAGE_FILE_BYTES`] are refused before decoding, and
//! decoding runs under `image`'s allocation limits, so a crafted file cannot exhaust
//! memory.
//!
//! **PDFs** become a `document` block. A PDF of more than [`PDF_PAGES_WITHOUT_RANGE`]
//! pages must be read in parts with the `pages` parameter (`"3"`, `"1-5"`, at most
//! [`PDF_MAX_PAGES_PER_READ`] pages a call; the reference tool's rule), which sends a PDF
//! of those pages only, cut from the file with `lopdf`. The page count, and whether the
//! file is a PDF at all, come from parsing it; an encrypted or broken PDF is an error.

use std::io::Cursor;
use std::path::Path;

use base64::Engine as _;
use serde_json::{Map, Value, json};
use strata_protocol::message::{ContentBlock, ImageBlock};

use super::ToolOutput;

/// Images larger than this (bytes on disk) are refused without decoding.
pub(crate) const MAX_IMAGE_FILE_BYTES: u64 = 30 * 1024 * 1024;
/// The API's limit for one image, base64.
pub(crate) const MAX_IMAGE_BASE64_BYTES: usize = 5 * 1024 * 1024;
/// The longest side an image is sent with.
pub(crate) const MAX_IMAGE_SIDE: u32 = 2000;
/// Whole PDFs up to this many pages are sent without `pages`.
pub(crate) const PDF_PAGES_WITHOUT_RANGE: usize = 10;
/// The most pages one Read of a PDF sends.
pub(crate) const PDF_MAX_PAGES_PER_READ: usize = 20;
/// PDFs larger than this (bytes on disk) are refused: the API's request limit is 32 MB
/// and base64 adds a third.
pub(crate) const MAX_PDF_FILE_BYTES: u64 = 100 * 1024 * 1024;
/// The largest PDF (bytes, before base64) sent in one request.
pub(crate) const MAX_PDF_SEND_BYTES: usize = 20 * 1024 * 1024;
/// Decoding an image may allocate at most this much.
const MAX_DECODE_ALLOC: u64 = 512 * 1024 * 1024;

/// What Read does with a file, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `.png`, `.jpg`/`.jpeg`, `.gif`, `.webp`.
    Image,
    /// `.pdf`.
    Pdf,
    /// `.ipynb`.
    Notebook,
    /// Anything else: numbered lines.
    Text,
}

impl FileKind {
    /// The kind of `path`, by extension (case-insensitive).
    pub(crate) fn of(path: &Path) -> Self {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("png" | "jpg" | "jpeg" | "gif" | "webp") => Self::Image,
            Some("pdf") => Self::Pdf,
            Some("ipynb") => Self::Notebook,
            _ => Self::Text,
        }
    }
}

/// An inclusive, 1-based page range (`pages: "3-5"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageRange {
    /// First page, from 1.
    pub(crate) first: usize,
    /// Last page, at least `first`.
    pub(crate) last: usize,
}

impl PageRange {
    /// Parses `"3"` or `"1-5"`; the error says what is accepted.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{text:?} is not a page range: use \"3\" or \"1-5\" (pages count from 1, at most \
                 {PDF_MAX_PAGES_PER_READ} a call)"
            )
        };
        let number = |s: &str| s.trim().parse::<usize>().ok().filter(|n| *n >= 1);
        let (first, last) = match text.split_once('-') {
            Some((a, b)) => (number(a).ok_or_else(bad)?, number(b).ok_or_else(bad)?),
            None => {
                let n = number(text).ok_or_else(bad)?;
                (n, n)
            }
        };
        if last < first {
            return Err(bad());
        }
        if last - first + 1 > PDF_MAX_PAGES_PER_READ {
            return Err(format!(
                "{text:?} is {} pages; read at most {PDF_MAX_PAGES_PER_READ} pages a call",
                last - first + 1
            ));
        }
        Ok(Self { first, last })
    }

    fn count(self) -> usize {
        self.last - self.first + 1
    }
}

/// Reads the whole file, refusing one larger than `cap`.
fn read_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>, ToolOutput> {
    let shown = path.display();
    let len = std::fs::metadata(path)
        .map_err(|e| ToolOutput::error(format!("Cannot read {shown}: {e}")))?
        .len();
    if len > cap {
        return Err(ToolOutput::error(format!(
            "{shown} is {} MB; Read sends {what} of at most {} MB. Make a smaller copy \
             (for example with ImageMagick or qpdf through Bash) and read that.",
            mb(len as usize),
            cap / (1024 * 1024)
        )));
    }
    std::fs::read(path).map_err(|e| ToolOutput::error(format!("Cannot read {shown}: {e}")))
}

fn mb(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The base64 length of `n` bytes.
fn base64_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// A base64 image block.
pub(crate) fn image_block(media_type: &str, data: String) -> ContentBlock {
    ContentBlock::Image(ImageBlock {
        source: json!({"type": "base64", "media_type": media_type, "data": data}),
        extra: Map::new(),
    })
}

/// The media type of a format the API takes.
fn media_type(format: image::ImageFormat) -> Option<&'static str> {
    match format {
        image::ImageFormat::Png => Some("image/png"),
        image::ImageFormat::Jpeg => Some("image/jpeg"),
        image::ImageFormat::Gif => Some("image/gif"),
        image::ImageFormat::WebP => Some("image/webp"),
        _ => None,
    }
}

/// An image ready to send.
#[derive(Debug)]
pub(crate) struct PreparedImage {
    /// `image/png`, …
    pub(crate) media_type: &'static str,
    /// The bytes to send.
    pub(crate) bytes: Vec<u8>,
    /// Width and height of the file.
    pub(crate) original: (u32, u32),
    /// Width and height sent.
    pub(crate) sent: (u32, u32),
}

/// Prepares `bytes` (an image file's content) for the API: as it is when it fits,
/// otherwise scaled to [`MAX_IMAGE_SIDE`] and re-encoded. The error is for the model.
pub(crate) fn prepare_image(bytes: &[u8]) -> Result<PreparedImage, String> {
    let format = image::guess_format(bytes).map_err(|_| {
        "its content is not a PNG, JPEG, GIF or WebP image (the file may be damaged or \
         misnamed)"
            .to_owned()
    })?;
    let Some(media_type) = media_type(format) else {
        return Err(format!(
            "it is a {format:?} image; Read sends PNG, JPEG, GIF and WebP. Convert it (for \
             example `convert in out.png` with ImageMagick) and read the copy."
        ));
    };
    let mut reader = image::ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits());
    let original = reader
        .into_dimensions()
        .map_err(|e| format!("it cannot be decoded: {e}"))?;
    let fits = original.0 <= MAX_IMAGE_SIDE
        && original.1 <= MAX_IMAGE_SIDE
        && base64_len(bytes.len()) <= MAX_IMAGE_BASE64_BYTES;
    if fits {
        return Ok(PreparedImage {
            media_type,
            bytes: bytes.to_vec(),
            original,
            sent: original,
        });
    }
    let mut reader = image::ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits());
    let decoded = reader
        .decode()
        .map_err(|e| format!("it cannot be decoded: {e}"))?;
    let mut side = MAX_IMAGE_SIDE;
    // Scaled to fit, then smaller still while the encoding is over the API's limit.
    for _ in 0..4 {
        let scaled = if decoded.width() > side || decoded.height() > side {
            decoded.resize(side, side, image::imageops::FilterType::Triangle)
        } else {
            decoded.clone()
        };
        let sent = (scaled.width(), scaled.height());
        if format == image::ImageFormat::Png
            && let Some(png) = encode_png(&scaled).filter(|p| fits_api(p))
        {
            return Ok(PreparedImage {
                media_type: "image/png",
                bytes: png,
                original,
                sent,
            });
        }
        if let Some(jpeg) = encode_jpeg(&scaled).filter(|j| fits_api(j)) {
            return Ok(PreparedImage {
                media_type: "image/jpeg",
                bytes: jpeg,
                original,
                sent,
            });
        }
        side = side * 3 / 4;
    }
    Err(format!(
        "it is {}×{} and stays over the API's {} MB image limit even scaled down to {side} \
         pixels a side",
        original.0,
        original.1,
        MAX_IMAGE_BASE64_BYTES / (1024 * 1024)
    ))
}

fn limits() -> image::Limits {
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    limits.max_image_width = Some(30_000);
    limits.max_image_height = Some(30_000);
    limits
}

fn fits_api(bytes: &[u8]) -> bool {
    base64_len(bytes.len()) <= MAX_IMAGE_BASE64_BYTES
}

fn encode_png(img: &image::DynamicImage) -> Option<Vec<u8>> {
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).ok()?;
    Some(out.into_inner())
}

fn encode_jpeg(img: &image::DynamicImage) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80);
    img.to_rgb8().write_with_encoder(encoder).ok()?;
    Some(out)
}

/// Read of an image file.
pub(crate) fn read_image(path: &Path) -> ToolOutput {
    let shown = path.display();
    let bytes = match read_capped(path, MAX_IMAGE_FILE_BYTES, "images") {
        Ok(b) => b,
        Err(e) => return e,
    };
    let image = match prepare_image(&bytes) {
        Ok(image) => image,
        Err(why) => return ToolOutput::error(format!("Cannot read the image {shown}: {why}.")),
    };
    let scaled = if image.sent == image.original {
        String::new()
    } else {
        format!(", sent scaled to {}×{}", image.sent.0, image.sent.1)
    };
    let content = format!(
        "Image {shown} ({}, {}×{}{scaled}, {} KB), attached.",
        image.media_type,
        image.original.0,
        image.original.1,
        bytes.len().div_ceil(1024)
    );
    // The transcript's detail leaves the data out: it is in the message's content.
    let detail = json!({
        "type": "image",
        "file": {
            "filePath": path,
            "type": image.media_type,
            "originalSize": bytes.len(),
            "dimensions": {
                "originalWidth": image.original.0,
                "originalHeight": image.original.1,
                "displayWidth": image.sent.0,
                "displayHeight": image.sent.1,
            },
        }
    });
    let block = image_block(image.media_type, base64(&image.bytes));
    let mut out = ToolOutput::ok(content).with_detail(detail);
    out.attachments = Some(Box::new(vec![block]));
    out
}

/// Read of a PDF, whole or `pages` of it.
pub(crate) fn read_pdf(path: &Path, pages: Option<PageRange>) -> ToolOutput {
    let shown = path.display();
    let bytes = match read_capped(path, MAX_PDF_FILE_BYTES, "PDFs") {
        Ok(b) => b,
        Err(e) => return e,
    };
    let mut doc = match lopdf::Document::load_mem(&bytes) {
        Ok(doc) => doc,
        Err(e) => {
            return ToolOutput::error(format!(
                "Cannot read the PDF {shown}: it does not parse as a PDF ({e}). If it is \
                 damaged, re-export it from the program that made it."
            ));
        }
    };
    if doc.is_encrypted() {
        return ToolOutput::error(format!(
            "Cannot read the PDF {shown}: it is encrypted (password protected). Remove the \
             protection (for example `qpdf --decrypt`) and read the copy."
        ));
    }
    let total = doc.get_pages().len();
    let (send, range_text) = match pages {
        None if total > PDF_PAGES_WITHOUT_RANGE => {
            return ToolOutput::error(format!(
                "{shown} has {total} pages: read it in parts with `pages` (for example \
                 \"1-{}\"), at most {PDF_MAX_PAGES_PER_READ} pages a call.",
                PDF_PAGES_WITHOUT_RANGE.min(total)
            ));
        }
        None => (bytes.clone(), None),
        Some(range) => {
            if range.last > total {
                return ToolOutput::error(format!(
                    "{shown} has {total} page(s); pages {}-{} are past its end.",
                    range.first, range.last
                ));
            }
            match cut_pages(&mut doc, range) {
                Ok(cut) => (cut, Some(format!("{}-{}", range.first, range.last))),
                Err(e) => {
                    return ToolOutput::error(format!(
                        "Cannot take pages {}-{} out of {shown}: {e}",
                        range.first, range.last
                    ));
                }
            }
        }
    };
    if send.len() > MAX_PDF_SEND_BYTES {
        return ToolOutput::error(format!(
            "{shown}{} is {} MB; a PDF sent to the model may be at most {} MB. Read fewer \
             pages at a time.",
            range_text
                .as_deref()
                .map(|r| format!(" (pages {r})"))
                .unwrap_or_default(),
            mb(send.len()),
            MAX_PDF_SEND_BYTES / (1024 * 1024)
        ));
    }
    let sent_pages = pages.map_or(total, PageRange::count);
    let content = match &range_text {
        Some(r) => format!(
            "PDF {shown}: pages {r} of {total} ({} KB sent), attached.",
            send.len().div_ceil(1024)
        ),
        None => format!(
            "PDF {shown}: {total} page(s), {} KB, attached.",
            bytes.len().div_ceil(1024)
        ),
    };
    let detail = json!({
        "type": "pdf",
        "file": {
            "filePath": path,
            "originalSize": bytes.len(),
            "totalPages": total,
            "pages": range_text,
            "pagesSent": sent_pages,
        }
    });
    let mut source = Map::new();
    source.insert("type".into(), json!("document"));
    source.insert(
        "source".into(),
        json!({"type": "base64", "media_type": "application/pdf", "data": base64(&send)}),
    );
    let mut out = ToolOutput::ok(content).with_detail(detail);
    out.attachments = Some(Box::new(vec![ContentBlock::Unknown(source)]));
    out
}

/// The PDF of `range`'s pages of `doc`.
fn cut_pages(doc: &mut lopdf::Document, range: PageRange) -> Result<Vec<u8>, String> {
    let others: Vec<u32> = doc
        .get_pages()
        .keys()
        .copied()
        .filter(|n| {
            let n = *n as usize;
            n < range.first || n > range.last
        })
        .collect();
    doc.delete_pages(&others);
    doc.prune_objects();
    let mut out = Vec::new();
    doc.save_to(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// `pages` as the model gave it: absent or blank means none (models send `""` for
/// files that are not PDFs).
pub(crate) fn pages_input(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_ranges_are_one_based_inclusive_and_capped() {
        assert_eq!(
            PageRange::parse("3").unwrap(),
            PageRange { first: 3, last: 3 }
        );
        assert_eq!(
            PageRange::parse(" 2 - 6 ").unwrap(),
            PageRange { first: 2, last: 6 }
        );
        for bad in ["0", "5-2", "a", "1-", "-3", "1-2-3"] {
            let e = PageRange::parse(bad).unwrap_err();
            assert!(e.contains("not a page range"), "{bad}: {e}");
        }
        let e = PageRange::parse("1-21").unwrap_err();
        assert!(e.contains("at most 20"), "{e}");
        assert!(PageRange::parse("1-20").is_ok());
    }

    #[test]
    fn kinds_come_from_the_extension() {
        assert_eq!(FileKind::of(Path::new("/a/b.PNG")), FileKind::Image);
        assert_eq!(FileKind::of(Path::new("/a/b.jpeg")), FileKind::Image);
        assert_eq!(FileKind::of(Path::new("/a/b.pdf")), FileKind::Pdf);
        assert_eq!(FileKind::of(Path::new("/a/b.ipynb")), FileKind::Notebook);
        assert_eq!(FileKind::of(Path::new("/a/b.rs")), FileKind::Text);
        assert_eq!(FileKind::of(Path::new("/a/png")), FileKind::Text);
    }

    #[test]
    fn a_blank_pages_value_is_no_pages() {
        assert_eq!(pages_input(Some(&json!(""))), None);
        assert_eq!(pages_input(Some(&json!("  "))), None);
        assert_eq!(pages_input(Some(&json!("1-2"))), Some("1-2"));
        assert_eq!(pages_input(None), None);
    }
}
