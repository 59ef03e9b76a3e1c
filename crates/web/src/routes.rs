//! The server's addresses and what each answers.
//!
//! | address | answer |
//! |---|---|
//! | `GET /` | the sessions page |
//! | `GET /sessions/{id}` | one session's page |
//! | `GET /events` | server-sent events: the listing's changes (`events.rs`) |
//! | `GET /sessions/{id}/events` | server-sent events: the session's row and conversation |
//! | `GET /api/sessions` | every session's row, JSON |
//! | `GET /api/sessions/{id}` | one row, JSON (404 when the bucket has none) |
//! | `POST /api/sessions/{id}/mode` | `{"mode": …}`: asks the session to change mode (202) |
//! | `GET /assets/app.js`, `/assets/style.css` | the page's script and style |
//!
//! Errors are JSON `{"error": …}` on the API and a page elsewhere.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;
use strata_protocol::permission::ExternalPermissionMode;
use strata_remote::{ModeRequestError, request_mode};

use crate::hub::Hub;
use crate::{ServeOptions, events, guard, html};

/// What every handler reaches.
#[derive(Clone)]
pub(crate) struct App {
    pub(crate) hub: Arc<Hub>,
    pub(crate) options: ServeOptions,
}

/// The longest session id the server accepts.
const MAX_ID_LEN: usize = 128;

/// Whether `id` can be a session id: letters, digits, `-`, `_` and `=` only. Anything
/// else is refused before it reaches NATS, where `.`, `*` and `>` would make the
/// transcript subject `strata.session.<id>` mean other subjects.
pub(crate) fn valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'='))
}

/// A JSON error answer.
pub(crate) fn error_response(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// The router over `app`.
pub(crate) fn router(app: App) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/sessions/{id}", get(session))
        .route("/events", get(events::index_events))
        .route("/sessions/{id}/events", get(events::session_events))
        .route("/api/sessions", get(api_sessions))
        .route("/api/sessions/{id}", get(api_session))
        .route("/api/sessions/{id}/mode", post(api_mode))
        .route("/assets/app.js", get(script))
        .route("/assets/style.css", get(style))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            guard::guard,
        ))
        .with_state(app)
}

async fn index(State(app): State<App>) -> Html<String> {
    Html(html::index_page(&app.hub.rows()))
}

async fn session(State(app): State<App>, Path(id): Path<String>) -> Response {
    if !valid_session_id(&id) {
        return (
            StatusCode::NOT_FOUND,
            Html(html::not_found_page("That is not a session id.")),
        )
            .into_response();
    }
    Html(html::session_page(&id, app.hub.row(&id).as_ref())).into_response()
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Html(html::not_found_page("There is no such page.")),
    )
        .into_response()
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("assets/app.js"),
    )
        .into_response()
}

async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("assets/style.css"),
    )
        .into_response()
}

async fn api_sessions(State(app): State<App>) -> Response {
    Json(app.hub.rows()).into_response()
}

async fn api_session(State(app): State<App>, Path(id): Path<String>) -> Response {
    match app.hub.row(&id) {
        Some(row) => Json(row).into_response(),
        None => error_response(
            StatusCode::NOT_FOUND,
            &format!("there is no session {id} on the remote"),
        ),
    }
}

/// The body of a mode change.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModeBody {
    mode: String,
}

async fn api_mode(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Result<Json<ModeBody>, JsonRejection>,
) -> Response {
    if !valid_session_id(&id) {
        return error_response(StatusCode::NOT_FOUND, "that is not a session id");
    }
    let body = match body {
        Ok(Json(body)) => body,
        Err(JsonRejection::MissingJsonContentType(_)) => {
            return error_response(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "send the mode as JSON (Content-Type: application/json), e.g. {\"mode\":\"plan\"}",
            );
        }
        Err(rejection) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                &format!(
                    "the body must be {{\"mode\": <a permission mode>}}: {}",
                    rejection.body_text()
                ),
            );
        }
    };
    // Only the public modes: the ones a metadata document may hold.
    let mode = match body.mode.parse::<ExternalPermissionMode>() {
        Ok(mode) => mode,
        Err(error) => return error_response(StatusCode::BAD_REQUEST, &error.to_string()),
    };
    match request_mode(app.hub.connection(), &id, mode).await {
        Ok(request) => (
            StatusCode::ACCEPTED,
            Json(json!({ "session": id, "request": request })),
        )
            .into_response(),
        Err(error @ ModeRequestError::NoSession(_)) => {
            error_response(StatusCode::NOT_FOUND, &error.to_string())
        }
        Err(ModeRequestError::Remote(error)) => error_response(
            StatusCode::BAD_GATEWAY,
            &format!("the mode was not written: {error}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_that_would_change_the_subject_are_refused() {
        assert!(valid_session_id("0b6c1f4e-2c5d-4e0a-9a54-1f3c2b7d8e90"));
        assert!(valid_session_id("a_b=c"));
        for bad in ["", "a.b", "a*", ">", "a/b", "a b", &"x".repeat(129)] {
            assert!(!valid_session_id(bad), "{bad:?}");
        }
    }
}
