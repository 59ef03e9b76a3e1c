//! The pages' live updates, as server-sent events (what `EventSource` reads).
//!
//! `GET /events` (the sessions page): `snapshot` `{"sessions": [rows]}` first, then
//! `session` (a row, new or changed) and `removed` `{"id"}`; a stream that fell behind the
//! hub's broadcast gets a fresh `snapshot` instead of the changes it missed.
//!
//! `GET /sessions/{id}/events` (a session's page): `session` / `removed` for that
//! session, and `entry` `{"seq", "items"}` for each transcript line with something to
//! show, from the first line on. An `entry` carries the stream sequence as its event id,
//! so a browser that reconnects by itself (sending `Last-Event-ID`) or a page that
//! reconnects with `?after=<seq>` gets only what it has not seen.
//!
//! Both send `remote` `{"status": "connected" | "reconnecting"}` first and on each change,
//! and a comment every 15 s to keep proxies from closing an idle stream. Dropping the
//! response (the tab closed) drops the streams, and with them the NATS consumer.

use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, BoxStream, Stream, StreamExt};
use serde_json::json;
use strata_remote::{Follow, follow_transcripts};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;

use crate::conversation::items_of_line;
use crate::hub::{Change, Hub, RemoteStatus};
use crate::routes::{App, error_response, valid_session_id};

type Events = BoxStream<'static, Result<Event, Infallible>>;

fn event(name: &str, data: &serde_json::Value) -> Result<Event, Infallible> {
    Ok(Event::default().event(name).data(data.to_string()))
}

fn snapshot(hub: &Hub) -> Result<Event, Infallible> {
    event("snapshot", &json!({ "sessions": hub.rows() }))
}

fn change_event(change: &Change) -> Result<Event, Infallible> {
    match change {
        Change::Row(row) => event("session", &json!(row)),
        Change::Removed(id) => event("removed", &json!({ "id": id })),
    }
}

/// The hub's changes that `keep` lets through; `on_lag` is what a stream that fell
/// behind gets instead of the changes it missed.
fn changes(
    receiver: broadcast::Receiver<Change>,
    keep: impl Fn(&Change) -> bool + Send + 'static,
    on_lag: impl Fn() -> Option<Result<Event, Infallible>> + Send + 'static,
) -> Events {
    // `Some(change)`, or `None` for "fell behind".
    stream::unfold(receiver, |mut receiver| async move {
        match receiver.recv().await {
            Ok(change) => Some((Some(change), receiver)),
            Err(RecvError::Lagged(_)) => Some((None, receiver)),
            Err(RecvError::Closed) => None,
        }
    })
    .filter_map(move |change| {
        let event = match change {
            Some(change) if keep(&change) => Some(change_event(&change)),
            Some(_) => None,
            None => on_lag(),
        };
        async move { event }
    })
    .boxed()
}

/// The connection's state now and on each change.
fn remote_status(mut receiver: watch::Receiver<RemoteStatus>) -> Events {
    let first = *receiver.borrow_and_update();
    let now = stream::once(async move { event("remote", &json!({ "status": first })) });
    let later = stream::unfold(receiver, |mut receiver| async move {
        receiver.changed().await.ok()?;
        let status = *receiver.borrow_and_update();
        Some((event("remote", &json!({ "status": status })), receiver))
    });
    now.chain(later).boxed()
}

fn sse(events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static) -> Response {
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `GET /events`.
pub(crate) async fn index_events(State(app): State<App>) -> Response {
    // Subscribed before the snapshot is taken: a change in between is sent twice
    // (harmless, rows are replaced whole), never lost.
    let receiver = app.hub.subscribe();
    let first = stream::iter([snapshot(&app.hub)]);
    let hub = app.hub.clone();
    let live = changes(receiver, |_| true, move || Some(snapshot(&hub)));
    sse(stream::select(
        first.chain(live),
        remote_status(app.hub.status()),
    ))
}

/// Where a session's stream starts: after `Last-Event-ID`, else after `?after=`, else
/// at the first line.
fn start_after(headers: &HeaderMap, uri: &Uri) -> u64 {
    let header = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok());
    let query = uri.query().and_then(|q| {
        q.split('&')
            .find_map(|pair| pair.strip_prefix("after="))
            .and_then(|v| v.parse().ok())
    });
    header.or(query).unwrap_or(0)
}

/// `GET /sessions/{id}/events`.
pub(crate) async fn session_events(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    if !valid_session_id(&id) {
        return error_response(StatusCode::NOT_FOUND, "that is not a session id");
    }
    let follow = Follow {
        session: Some(id.clone()),
        after: start_after(&headers, &uri),
    };
    let lines = match follow_transcripts(app.hub.connection(), follow).await {
        Ok(lines) => lines,
        Err(error) => {
            return error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("the session's transcript cannot be read now: {error}"),
            );
        }
    };
    let receiver = app.hub.subscribe();
    let first = stream::iter(app.hub.row(&id).map(|row| event("session", &json!(row))));
    let mine = id.clone();
    let rows = changes(
        receiver,
        move |change| match change {
            Change::Row(row) => row.id == mine,
            Change::Removed(removed) => *removed == mine,
        },
        {
            let (hub, id) = (app.hub.clone(), id.clone());
            move || hub.row(&id).map(|row| event("session", &json!(row)))
        },
    );
    let entries = lines.filter_map(|line| async move {
        let line = match line {
            Ok(line) => line,
            Err(error) => {
                tracing::warn!(%error, "a session's transcript stream failed");
                return None;
            }
        };
        let items = items_of_line(&line.line);
        if items.is_empty() {
            return None;
        }
        let data = json!({ "seq": line.sequence, "items": items });
        Some(Ok(Event::default()
            .event("entry")
            .id(line.sequence.to_string())
            .data(data.to_string())))
    });
    sse(stream::select(
        stream::select(first.chain(rows), entries.boxed()),
        remote_status(app.hub.status()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_starts_after_the_last_event_id_else_the_query() {
        let uri: Uri = "/sessions/s/events?after=7".parse().unwrap();
        let mut headers = HeaderMap::new();
        assert_eq!(start_after(&headers, &uri), 7);
        headers.insert("last-event-id", "12".parse().unwrap());
        assert_eq!(start_after(&headers, &uri), 12);
        let plain: Uri = "/sessions/s/events".parse().unwrap();
        assert_eq!(start_after(&HeaderMap::new(), &plain), 0);
    }
}
