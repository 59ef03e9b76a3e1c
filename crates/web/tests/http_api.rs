//! The web view's HTTP side (issue 17 item 4) against a real `nats-server -js` and the
//! server on 127.0.0.1:0: the listing and its events, a session's conversation as
//! events, the mode control answered by a worker watching its own key, and the requests
//! the server refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use strata_remote::{RemoteConnection, TranscriptPublisher, watch_own_key};
use strata_state::{EffectsHub, RecordingPorts, RuntimeFacts, SessionScope, default_app_state};
use strata_testkit::NatsServer;
use strata_web::{ServeOptions, serve};

/// How long a test waits for an event.
const EVENT_LIMIT: Duration = Duration::from_secs(5);

struct Web {
    _nats: NatsServer,
    connection: RemoteConnection,
    base: String,
    client: reqwest::Client,
    _server: tokio::task::JoinHandle<()>,
}

async fn connect(url: &str) -> RemoteConnection {
    // Waits (ten seconds at most) until the bucket and the stream are bound.
    RemoteConnection::connect_url(url).await.unwrap()
}

/// NATS with session `s1` in the bucket, and the server.
async fn start() -> Web {
    let nats = NatsServer::start();
    let connection = connect(&nats.url()).await;
    put(
        &connection,
        "s1",
        json!({"cwd": "/srv/<project>", "model": "claude-sonnet", "permission_mode": "default",
               "status": "active", "updated_at": "2026-01-02T03:04:05+00:00"}),
    )
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn({
        let connection = connection.clone();
        async move {
            serve(connection, listener, ServeOptions::default())
                .await
                .unwrap();
        }
    });
    Web {
        _nats: nats,
        connection,
        base,
        client: reqwest::Client::new(),
        _server: server,
    }
}

async fn put(connection: &RemoteConnection, key: &str, doc: Value) {
    connection
        .bucket()
        .await
        .put(key, serde_json::to_vec(&doc).unwrap().into())
        .await
        .unwrap();
}

fn user_line(uuid: &str, text: &str) -> String {
    json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": "/p",
           "sessionId": "s1", "version": "1", "type": "user",
           "message": {"role": "user", "content": text},
           "uuid": uuid, "timestamp": "2026-01-01T00:00:00.000Z"})
    .to_string()
}

fn tool_line(uuid: &str, command: &str) -> String {
    json!({"parentUuid": "u1", "isSidechain": false, "userType": "external", "cwd": "/p",
           "sessionId": "s1", "version": "1", "type": "assistant",
           "message": {"model": "m", "id": "msg_1", "type": "message", "role": "assistant",
                       "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                    "input": {"command": command}}],
                       "stop_reason": null, "stop_sequence": null,
                       "usage": {"input_tokens": 1, "output_tokens": 1}},
           "uuid": uuid, "timestamp": "2026-01-01T00:00:01.000Z"})
    .to_string()
}

/// One server-sent event.
#[derive(Debug)]
struct Sse {
    event: String,
    id: Option<String>,
    data: Value,
}

/// Reads server-sent events off a response body.
struct Events {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl Events {
    async fn open(web: &Web, path: &str, last_event_id: Option<&str>) -> Self {
        let mut request = web.client.get(format!("{}{path}", web.base));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "an event stream"
        );
        Self {
            body: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    async fn next(&mut self) -> Sse {
        let deadline = Instant::now() + EVENT_LIMIT;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut event, mut id, mut data) = (String::from("message"), None, String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Sse {
                    event,
                    id,
                    data: serde_json::from_str(&data).unwrap(),
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let chunk = tokio::time::timeout(left, self.body.next())
                .await
                .expect("an event in time")
                .expect("the stream goes on")
                .unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The next event named `name` that `wanted` accepts.
    async fn until(&mut self, name: &str, wanted: impl Fn(&Value) -> bool) -> Sse {
        loop {
            let event = self.next().await;
            if event.event == name && wanted(&event.data) {
                return event;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item4_sessions_are_listed_and_a_metadata_change_arrives_as_an_event() {
    let web = start().await;
    let rows: Value = web
        .client
        .get(format!("{}/api/sessions", web.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rows[0]["id"], "s1");
    assert_eq!(rows[0]["cwd"], "/srv/<project>");
    assert_eq!(rows[0]["permission_mode"], "default");

    let page = web
        .client
        .get(format!("{}/", web.base))
        .send()
        .await
        .unwrap();
    assert!(
        page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src 'self'")
    );
    let html = page.text().await.unwrap();
    assert!(html.contains("/srv/&lt;project&gt;"), "{html}");
    assert!(html.contains("href=\"/sessions/s1\""));

    let mut events = Events::open(&web, "/events", None).await;
    let first = events.until("snapshot", |_| true).await;
    assert_eq!(first.data["sessions"][0]["id"], "s1");

    // A change made in the bucket arrives as it happens.
    let started = Instant::now();
    put(
        &web.connection,
        "s1",
        json!({"permission_mode": "plan", "status": "active", "cwd": "/srv/<project>"}),
    )
    .await;
    let change = events
        .until("session", |row| row["permission_mode"] == "plan")
        .await;
    eprintln!("the metadata change arrived in {:?}", started.elapsed());
    assert_eq!(change.data["id"], "s1");

    // The first prompt on the stream titles the session.
    let publisher =
        TranscriptPublisher::spawn(web.connection.clone(), &tokio::runtime::Handle::current());
    publisher.publish("s1", "u1", &user_line("u1", "fix <b>the</b> build"));
    let titled = events.until("session", |row| !row["title"].is_null()).await;
    assert_eq!(titled.data["title"], "fix <b>the</b> build");

    // A session leaving the bucket leaves the list.
    web.connection.bucket().await.delete("s1").await.unwrap();
    let removed = events.until("removed", |_| true).await;
    assert_eq!(removed.data["id"], "s1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item4_transcript_entries_arrive_on_the_session_stream_and_resume_after_the_last_id() {
    let web = start().await;
    let publisher =
        TranscriptPublisher::spawn(web.connection.clone(), &tokio::runtime::Handle::current());
    publisher.publish("s1", "u1", &user_line("u1", "run the tests"));
    publisher.publish("other", "x1", &user_line("x1", "not this session"));
    assert!(publisher.flush(EVENT_LIMIT).await);

    let mut events = Events::open(&web, "/sessions/s1/events", None).await;
    let row = events.until("session", |_| true).await;
    assert_eq!(row.data["status"], "active");
    let first = events.until("entry", |_| true).await;
    assert_eq!(
        first.data["items"],
        json!([{"kind": "prompt", "text": "run the tests"}])
    );
    let first_id = first
        .id
        .clone()
        .expect("an entry carries its sequence as id");

    // A line published now arrives live; another session's never does.
    publisher.publish("s1", "a1", &tool_line("a1", "cargo test\nmore"));
    let second = events.until("entry", |_| true).await;
    assert_eq!(
        second.data["items"],
        json!([{"kind": "tool", "name": "Bash", "summary": "cargo test…"}])
    );

    // A browser reconnecting with Last-Event-ID gets only what it has not seen.
    let mut again = Events::open(&web, "/sessions/s1/events", Some(&first_id)).await;
    let next = again.until("entry", |_| true).await;
    assert_eq!(next.id, second.id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item4_the_mode_control_is_answered_by_the_running_session() {
    let web = start().await;
    // The worker: a session store watching its own key, as `strata --remote` runs one.
    let rec = RecordingPorts::default();
    let state = default_app_state(RuntimeFacts::default());
    let hub = EffectsHub::new(rec.ports(&state.runtime));
    let root = SessionScope::new().create_root(state, hub).unwrap();
    let _watch = watch_own_key(&web.connection, "s1".into(), root.store().clone());
    let mut events = Events::open(&web, "/sessions/s1/events", None).await;

    let answer = web
        .client
        .post(format!("{}/api/sessions/s1/mode", web.base))
        .json(&json!({"mode": "acceptEdits"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202);
    let request: Value = answer.json().await.unwrap();
    let id = request["request"]["id"].as_str().unwrap().to_owned();
    let reply = events
        .until("session", |row| row["mode_reply"]["id"] == id.as_str())
        .await;
    assert_eq!(reply.data["mode_reply"]["accepted"], true);
    assert_eq!(reply.data["permission_mode"], "acceptEdits");

    // bypassPermissions is written, refused by the session's gate, and the page is told
    // why and which mode stays.
    let answer = web
        .client
        .post(format!("{}/api/sessions/s1/mode", web.base))
        .json(&json!({"mode": "bypassPermissions"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202);
    let id = answer.json::<Value>().await.unwrap()["request"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = events
        .until("session", |row| row["mode_reply"]["id"] == id.as_str())
        .await;
    assert_eq!(reply.data["mode_reply"]["accepted"], false);
    assert_eq!(reply.data["mode_reply"]["mode"], "acceptEdits");
    assert!(
        reply.data["mode_reply"]["reason"]
            .as_str()
            .unwrap()
            .contains("not available"),
        "{}",
        reply.data
    );
    assert_eq!(reply.data["permission_mode"], "acceptEdits");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item4_bad_or_foreign_change_requests_are_refused_with_a_reason() {
    let web = start().await;
    let url = format!("{}/api/sessions/s1/mode", web.base);
    let error = async |response: reqwest::Response| {
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        (
            status,
            body["error"].as_str().unwrap_or_default().to_owned(),
        )
    };

    let (status, message) = error(
        web.client
            .post(&url)
            .json(&json!({"mode": "yolo"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert!(message.contains("acceptEdits"), "{message}");

    let (status, message) = error(
        web.client
            .post(&url)
            .json(&json!({"mode": "bubble"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "an internal mode never goes out: {message}");

    let (status, message) = error(
        web.client
            .post(&url)
            .body("mode=plan")
            .header("content-type", "application/x-www-form-urlencoded")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 415, "a form cannot change a mode: {message}");

    let (status, _) = error(
        web.client
            .post(&url)
            .header("origin", "http://evil.example")
            .json(&json!({"mode": "plan"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 403, "another site's page cannot change a mode");

    let (status, _) = error(
        web.client
            .get(format!("{}/api/sessions", web.base))
            .header("host", "rebound.example")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 421, "a DNS-rebound name is not this server");

    let (status, message) = error(
        web.client
            .post(format!("{}/api/sessions/nobody/mode", web.base))
            .json(&json!({"mode": "plan"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404);
    assert!(message.contains("no session nobody"), "{message}");
    assert!(
        web.connection
            .bucket()
            .await
            .get("nobody")
            .await
            .unwrap()
            .is_none()
    );

    let (status, _) = error(
        web.client
            .post(format!("{}/api/sessions/a.%3E/mode", web.base))
            .json(&json!({"mode": "plan"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404, "an id that would be a wildcard subject");

    // None of it changed the document.
    let doc: Value = serde_json::from_slice(
        &web.connection
            .bucket()
            .await
            .get("s1")
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(doc["permission_mode"], "default");
}
