//! MCP results as strata's tool results: text parts joined, images and embedded blobs
//! kept as images, resource links and embedded text resources written as text the model
//! can follow. Read from the wire JSON of the result (the protocol's own shape), so the
//! conversion does not depend on the SDK's Rust model of each content kind.

use serde_json::Value;

/// One image of a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Its MIME type (`image/png`).
    pub mime_type: String,
    /// Base64 data.
    pub data: String,
}

/// A tool result, converted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallOutput {
    /// The text parts, in order, one per line.
    pub text: String,
    /// The images, in order.
    pub images: Vec<Image>,
    /// The server marked the result as an error.
    pub is_error: bool,
    /// The result as the server sent it (the transcript's `toolUseResult`).
    pub raw: Value,
}

/// Converts a `tools/call` result (wire JSON).
pub fn convert_call_result(raw: Value) -> CallOutput {
    let mut out = CallOutput {
        is_error: raw.get("isError").and_then(Value::as_bool).unwrap_or(false),
        ..CallOutput::default()
    };
    let mut parts: Vec<String> = Vec::new();
    for item in raw
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        convert_item(item, &mut parts, &mut out.images);
    }
    if parts.is_empty()
        && out.images.is_empty()
        && let Some(structured) = raw.get("structuredContent")
    {
        parts.push(structured.to_string());
    }
    out.text = parts.join("\n");
    out.raw = raw;
    out
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn convert_item(item: &Value, parts: &mut Vec<String>, images: &mut Vec<Image>) {
    match str_of(item, "type") {
        "text" => parts.push(str_of(item, "text").to_owned()),
        "image" => images.push(Image {
            mime_type: str_of(item, "mimeType").to_owned(),
            data: str_of(item, "data").to_owned(),
        }),
        "audio" => parts.push(format!(
            "[audio content ({}) omitted]",
            str_of(item, "mimeType")
        )),
        "resource_link" => {
            let mut line = format!("[Resource link: {}", str_of(item, "uri"));
            let name = str_of(item, "name");
            if !name.is_empty() {
                line.push_str(&format!(" ({name})"));
            }
            let description = str_of(item, "description");
            if !description.is_empty() {
                line.push_str(&format!(": {description}"));
            }
            line.push(']');
            parts.push(line);
        }
        "resource" => {
            let resource = item.get("resource").unwrap_or(&Value::Null);
            resource_contents(resource, parts, images);
        }
        other => parts.push(format!("[unsupported MCP content type {other:?}]")),
    }
}

/// One entry of a resource's contents (a `resources/read` result or an embedded
/// resource): text as text, an image blob as an image, another blob described.
pub fn resource_contents(resource: &Value, parts: &mut Vec<String>, images: &mut Vec<Image>) {
    let uri = str_of(resource, "uri");
    let mime = str_of(resource, "mimeType");
    if let Some(text) = resource.get("text").and_then(Value::as_str) {
        parts.push(format!("[Resource {uri}]\n{text}"));
    } else if let Some(blob) = resource.get("blob").and_then(Value::as_str) {
        if mime.starts_with("image/") {
            images.push(Image {
                mime_type: mime.to_owned(),
                data: blob.to_owned(),
            });
        } else {
            parts.push(format!(
                "[Resource {uri}: binary content ({mime}, {} base64 characters) not shown]",
                blob.len()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_images_and_links_become_blocks_the_model_reads() {
        let out = convert_call_result(json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "test://static/resource/1", "name": "Resource 1"},
            {"type": "resource", "resource": {"uri": "test://r/2", "text": "body"}}
        ]}));
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "hello\n[Resource link: test://static/resource/1 (Resource 1)]\n[Resource test://r/2]\nbody"
        );
        assert_eq!(
            out.images,
            vec![Image {
                mime_type: "image/png".into(),
                data: "iVBO".into()
            }]
        );
        let err = convert_call_result(
            json!({"content": [{"type": "text", "text": "no"}], "isError": true}),
        );
        assert!(err.is_error);
        let structured =
            convert_call_result(json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(structured.text, "{\"sum\":3}");
    }
}
