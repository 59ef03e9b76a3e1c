//! One session as the page lists it: its metadata document read field by field, with the
//! title its transcript gives when the document has none.
//!
//! The document is written by other programs (other strata versions, scripts), so every
//! field is read leniently: a value of the wrong type counts as absent, never as an error
//! that hides the session.

use serde::Serialize;
use serde_json::{Map, Value};
use strata_protocol::permission::ExternalPermissionMode;
use strata_remote::{ModeReply, ModeRequest};

use crate::conversation::one_line;

/// One session of the listing (also the JSON the page's scripts receive).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct SessionRow {
    /// The session id (the bucket's key).
    pub(crate) id: String,
    /// The document's `title`, else the transcript's title, else `None`.
    pub(crate) title: Option<String>,
    /// The working directory.
    pub(crate) cwd: Option<String>,
    /// The model.
    pub(crate) model: Option<String>,
    /// The permission mode the document holds.
    pub(crate) permission_mode: Option<String>,
    /// `active`, `ended`, … as the worker wrote it.
    pub(crate) status: Option<String>,
    /// When the document was last written (RFC 3339).
    pub(crate) updated_at: Option<String>,
    /// The last mode request the document holds.
    pub(crate) mode_request: Option<ModeRequest>,
    /// The session's answer to the last request it saw.
    pub(crate) mode_reply: Option<ModeReply>,
    /// Set when the stored value is not a JSON object: why it cannot be read.
    pub(crate) unreadable: Option<String>,
    /// The bucket revision this row was read from.
    pub(crate) revision: u64,
}

/// The mode names the control offers: the public modes, the only ones a document may
/// hold (internal modes never leave a process).
pub(crate) fn offered_modes() -> impl Iterator<Item = &'static str> {
    ExternalPermissionMode::ALL.into_iter().map(|m| m.as_str())
}

impl SessionRow {
    /// The row of document `doc` of session `id` at `revision`; `title` is the
    /// transcript's title, used when the document has none.
    pub(crate) fn from_document(
        id: &str,
        revision: u64,
        doc: &Map<String, Value>,
        title: Option<String>,
    ) -> Self {
        let text = |key: &str| doc.get(key).and_then(Value::as_str).map(str::to_owned);
        Self {
            id: id.to_owned(),
            title: text("title").map(|t| one_line(&t)).or(title),
            cwd: text("cwd"),
            model: text("model"),
            permission_mode: text("permission_mode"),
            status: text("status"),
            updated_at: text("updated_at"),
            mode_request: ModeRequest::of(doc),
            mode_reply: ModeReply::of(doc),
            unreadable: None,
            revision,
        }
    }

    /// The row of a key whose value cannot be read.
    pub(crate) fn unreadable(id: &str, revision: u64, why: &str) -> Self {
        Self {
            id: id.to_owned(),
            unreadable: Some(why.to_owned()),
            revision,
            ..Self::default()
        }
    }

    /// The title to show: the row's, else the session id.
    pub(crate) fn display_title(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_of_the_wrong_type_count_as_absent() {
        let doc = json!({"cwd": "/p", "model": 3, "permission_mode": "plan", "title": null});
        let row = SessionRow::from_document("s", 7, doc.as_object().unwrap(), Some("t".into()));
        assert_eq!(row.cwd.as_deref(), Some("/p"));
        assert_eq!(row.model, None);
        assert_eq!(row.permission_mode.as_deref(), Some("plan"));
        assert_eq!(row.title.as_deref(), Some("t"), "the transcript's title");
        assert_eq!(row.revision, 7);
    }

    #[test]
    fn the_documents_title_wins_and_stays_on_one_line() {
        let doc = json!({"title": "Fix the build\nand more"});
        let row = SessionRow::from_document("s", 1, doc.as_object().unwrap(), Some("t".into()));
        assert_eq!(row.display_title(), "Fix the build…");
        assert_eq!(SessionRow::unreadable("s", 1, "bad").display_title(), "s");
    }

    #[test]
    fn the_control_offers_the_five_public_modes() {
        assert_eq!(
            offered_modes().collect::<Vec<_>>(),
            [
                "default",
                "acceptEdits",
                "plan",
                "bypassPermissions",
                "dontAsk"
            ]
        );
    }
}
