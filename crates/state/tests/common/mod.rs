//! Shared test helpers: a root store wired to recording ports, and a log capture.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::json;
use strata_state::{
    AppRoot, AppState, EffectsHub, RecordingPorts, RecordingRemote, RuntimeFacts,
    SessionExternalMetadata, SessionScope, default_app_state,
};

/// A root store on its own scope, with recording ports whose remote document starts as
/// the initial state's externalised mode (what a session publishes when it connects).
pub struct Harness {
    pub root: AppRoot,
    pub rec: RecordingPorts,
    pub scope: SessionScope,
}

pub fn harness(initial: AppState) -> Harness {
    let mode = initial.tool_permission_context.mode.external();
    let document: SessionExternalMetadata =
        serde_json::from_value(json!({ "permission_mode": mode.as_str() })).unwrap();
    let rec = RecordingPorts {
        remote: Arc::new(RecordingRemote::with(document)),
        ..RecordingPorts::default()
    };
    let hub = EffectsHub::new(rec.ports(&initial.runtime));
    let scope = SessionScope::new();
    let root = scope.create_root(initial, hub).unwrap();
    Harness { root, rec, scope }
}

pub fn default_harness() -> Harness {
    harness(default_app_state(RuntimeFacts::default()))
}

/// Everything written through `tracing` while `f` runs on this thread.
pub fn capture_logs<R>(f: impl FnOnce() -> R) -> (R, String) {
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    (out, text)
}
