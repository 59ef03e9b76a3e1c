//! User hooks: programs (and SDK callbacks) the user registers to run at points of a
//! session — before and after a tool call, when a prompt is submitted, when the model
//! stops, when a session starts or ends, … — which can block, allow, change a tool's
//! input, or add context for the model.
//!
//! This module owns the hook runtime: which hooks are registered ([`config`]: the
//! `hooks` key of the settings files, and callbacks an SDK client registers at
//! `initialize`), running them with the event as JSON (command hooks: on stdin, with a
//! timeout; callbacks: through a [`HookCallbacks`] port the host implements with
//! `hook_callback` control requests), and reading their answers ([`outcome`]). Where a
//! hook runs is the query loop's business (`query/calls.rs`: PreToolUse before the
//! permission decision, PermissionRequest when a prompt would be shown, PostToolUse
//! after; `query/mod.rs`: UserPromptSubmit, Stop); the events the loop does not reach
//! (SubagentStart/Stop, PreCompact, Notification, SessionStart/End) are functions here
//! that their owners call.
//!
//! A project's own hooks run only in a project the user trusted ([`trust`]).
//!
//! A hook that fails, cannot start or times out is reported (a warning, and in the
//! outcome's `errors`) and never hangs the turn: every run is bounded by its timeout and
//! by the turn's cancellation. It blocks only when registered with `onFailure: "block"`
//! ([`config::OnFailure`]). With `--include-hook-events` each run is
//! announced as `system/hook_started` and `system/hook_response` messages.
//!
//! These are not the engine's `SessionHooks`/`ToolHooks` (the services a tool reaches
//! of its session); those are internal ports.

mod command;
pub mod config;
pub mod outcome;
pub mod trust;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use strata_protocol::sdk::{HookResponseMessage, HookStartedMessage, SdkMessage, SystemMessage};
use tokio_util::sync::CancellationToken;

use self::config::{HookAction, OnFailure, Registration};
pub use self::outcome::{HookOutcome, HookPermission, PromptDecision};
use crate::query::ports::EventSink;
use crate::sync::lock;

/// The hook events of the reference agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// Before a tool call, before its permission decision.
    PreToolUse,
    /// After a tool call succeeded.
    PostToolUse,
    /// After a tool call failed.
    PostToolUseFailure,
    /// A prompt was submitted, before the model sees it.
    UserPromptSubmit,
    /// The model ended its turn.
    Stop,
    /// A sub-agent starts.
    SubagentStart,
    /// A sub-agent ended its turn.
    SubagentStop,
    /// The conversation is about to be compacted.
    PreCompact,
    /// A session starts (new, resumed, …).
    SessionStart,
    /// A session ends.
    SessionEnd,
    /// The user is notified (a permission prompt waits, …).
    Notification,
    /// A permission prompt would be shown.
    PermissionRequest,
}

impl HookEvent {
    /// Every event.
    pub const ALL: [HookEvent; 12] = [
        Self::PreToolUse,
        Self::PostToolUse,
        Self::PostToolUseFailure,
        Self::UserPromptSubmit,
        Self::Stop,
        Self::SubagentStart,
        Self::SubagentStop,
        Self::PreCompact,
        Self::SessionStart,
        Self::SessionEnd,
        Self::Notification,
        Self::PermissionRequest,
    ];

    /// The event's name in settings and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PostToolUseFailure => "PostToolUseFailure",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::Stop => "Stop",
            Self::SubagentStart => "SubagentStart",
            Self::SubagentStop => "SubagentStop",
            Self::PreCompact => "PreCompact",
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::Notification => "Notification",
            Self::PermissionRequest => "PermissionRequest",
        }
    }

    /// The event named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether plain stdout of a successful command hook is context for the model.
    /// Whether a hook set to `onFailure: "block"` blocks when it fails: not on the
    /// events that end something (there is nothing left to refuse).
    fn failure_can_block(self) -> bool {
        !matches!(self, Self::Stop | Self::SubagentStop | Self::SessionEnd)
    }

    fn stdout_is_context(self) -> bool {
        matches!(self, Self::UserPromptSubmit | Self::SessionStart)
    }
}

/// A boxed future of a callback's answer.
pub type CallbackFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, String>> + Send + 'a>>;

/// Calls an SDK client's hook callbacks (the host sends a `hook_callback` control
/// request and waits for its answer).
pub trait HookCallbacks: Send + Sync {
    /// Calls callback `callback_id` with the event `input`; the answer is a decision
    /// object (see [`outcome`]) or why there is none.
    fn call(
        &self,
        callback_id: &str,
        input: Value,
        tool_use_id: Option<String>,
    ) -> CallbackFuture<'_>;
}

/// What every hook input carries about the session.
#[derive(Clone, Debug, Default)]
pub struct HookSession {
    /// The session id.
    pub session_id: String,
    /// The transcript file.
    pub transcript_path: PathBuf,
    /// The working directory.
    pub cwd: PathBuf,
    /// The permission mode now.
    pub permission_mode: String,
}

/// The hooks of one session (see the module docs).
#[derive(Default)]
pub struct Hooks {
    registrations: Mutex<Vec<Registration>>,
    callbacks: Mutex<Option<Arc<dyn HookCallbacks>>>,
    /// Where `hook_started`/`hook_response` go (`--include-hook-events`).
    lifecycle: Mutex<Option<Arc<dyn EventSink>>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("registrations", &lock(&self.registrations).len())
            .finish_non_exhaustive()
    }
}

impl Hooks {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    /// The hooks of the settings' `hooks` value (`origin` names it in problems); returns
    /// the hooks and one line per registration that was skipped.
    pub fn from_settings(hooks: Option<&Value>, origin: &str) -> (Self, Vec<String>) {
        let this = Self::new();
        let problems = match hooks {
            Some(value) => {
                let (regs, problems) = config::from_settings(value, origin);
                lock(&this.registrations).extend(regs);
                problems
            }
            None => Vec::new(),
        };
        (this, problems)
    }

    /// Adds the hooks of a settings `hooks` value; returns one line per registration that
    /// was skipped.
    pub fn add_settings(&self, hooks: &Value, origin: &str) -> Vec<String> {
        let (regs, problems) = config::from_settings(hooks, origin);
        lock(&self.registrations).extend(regs);
        problems
    }

    /// Adds the callbacks an SDK client registered at `initialize`, called through
    /// `port`; returns one line per registration that was skipped.
    pub fn register_callbacks(&self, hooks: &Value, port: Arc<dyn HookCallbacks>) -> Vec<String> {
        let (regs, problems) = config::from_initialize(hooks);
        lock(&self.registrations).extend(regs);
        *lock(&self.callbacks) = Some(port);
        problems
    }

    /// Streams each hook run as `hook_started`/`hook_response` messages to `sink`.
    pub fn set_lifecycle_sink(&self, sink: Option<Arc<dyn EventSink>>) {
        *lock(&self.lifecycle) = sink;
    }

    /// Whether any hook is registered for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        lock(&self.registrations).iter().any(|r| r.event == event)
    }

    /// Runs the hooks of `event` whose matcher accepts `match_value`, one after the other
    /// in registration order, with `fields` added to the common input; stops early when
    /// `cancel` fires (the hooks not run are not consulted).
    pub async fn run(
        &self,
        event: HookEvent,
        match_value: Option<&str>,
        session: &HookSession,
        fields: Value,
        tool_use_id: Option<&str>,
        cancel: &CancellationToken,
    ) -> HookOutcome {
        let selected: Vec<Registration> = lock(&self.registrations)
            .iter()
            .filter(|r| r.event == event && r.matcher.matches(match_value))
            .cloned()
            .collect();
        let mut combined = HookOutcome::default();
        if selected.is_empty() {
            return combined;
        }
        let input = input(event, session, fields);
        let name = match match_value {
            Some(value) => format!("{}:{value}", event.as_str()),
            None => event.as_str().to_owned(),
        };
        for registration in selected {
            if cancel.is_cancelled() {
                break;
            }
            let hook_id = uuid::Uuid::new_v4().to_string();
            self.announce_start(&hook_id, &name, event, session);
            let ran = self
                .run_one(&registration, &input, tool_use_id, &name, session, cancel)
                .await;
            for error in &ran.outcome.errors {
                tracing::warn!("{error}");
            }
            tracing::debug!(
                hook = %name,
                status = ran.status,
                exit_code = ?ran.exit_code,
                blocked = ?ran.outcome.blocked,
                "hook ran"
            );
            self.announce_end(&hook_id, &name, event, session, &ran);
            let mut outcome = ran.outcome;
            if registration.on_failure == OnFailure::Block
                && event.failure_can_block()
                && outcome.blocked.is_none()
                && let Some(error) = outcome.errors.first()
            {
                outcome.blocked = Some(format!(
                    "{error} (the hook is set to block when it fails: \"onFailure\": \"block\")"
                ));
            }
            combined.merge(outcome);
        }
        combined
    }

    async fn run_one(
        &self,
        registration: &Registration,
        input: &Value,
        tool_use_id: Option<&str>,
        name: &str,
        session: &HookSession,
        cancel: &CancellationToken,
    ) -> Ran {
        match &registration.action {
            HookAction::Command { command } => {
                command::run(
                    command,
                    input,
                    registration.timeout,
                    &session.cwd,
                    registration.event.stdout_is_context(),
                    name,
                    cancel,
                )
                .await
            }
            HookAction::Callback { callback_id } => {
                let port = lock(&self.callbacks).clone();
                let Some(port) = port else {
                    return Ran::error(format!(
                        "{name} hook callback {callback_id:?} has no client to call"
                    ));
                };
                let call = port.call(callback_id, input.clone(), tool_use_id.map(str::to_owned));
                let answer = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Ran::cancelled(),
                    answer = tokio::time::timeout(registration.timeout, call) => answer,
                };
                match answer {
                    Ok(Ok(value)) => Ran {
                        outcome: outcome::from_json(&value),
                        stdout: value.to_string(),
                        stderr: String::new(),
                        exit_code: Some(0),
                        status: "success",
                    },
                    Ok(Err(error)) => Ran::error(format!(
                        "{name} hook callback {callback_id:?} failed: {error}"
                    )),
                    Err(_) => Ran::timeout(format!(
                        "{name} hook callback {callback_id:?} timed out after {}",
                        seconds(registration.timeout)
                    )),
                }
            }
        }
    }

    fn announce_start(&self, hook_id: &str, name: &str, event: HookEvent, session: &HookSession) {
        if let Some(sink) = lock(&self.lifecycle).clone() {
            sink.emit(SdkMessage::System(SystemMessage::HookStarted(
                HookStartedMessage {
                    hook_id: hook_id.to_owned(),
                    hook_name: name.to_owned(),
                    hook_event: event.as_str().to_owned(),
                    session_id: session.session_id.clone(),
                    uuid: uuid::Uuid::new_v4().to_string(),
                },
            )));
        }
    }

    fn announce_end(
        &self,
        hook_id: &str,
        name: &str,
        event: HookEvent,
        session: &HookSession,
        ran: &Ran,
    ) {
        if let Some(sink) = lock(&self.lifecycle).clone() {
            let outcome = if ran.status == "success" && ran.outcome.blocked.is_some() {
                "blocked"
            } else {
                ran.status
            };
            sink.emit(SdkMessage::System(SystemMessage::HookResponse(
                HookResponseMessage {
                    hook_id: hook_id.to_owned(),
                    hook_name: name.to_owned(),
                    hook_event: event.as_str().to_owned(),
                    output: ran.stdout.clone(),
                    stdout: ran.stdout.clone(),
                    stderr: ran.stderr.clone(),
                    exit_code: ran.exit_code,
                    outcome: outcome.to_owned(),
                    session_id: session.session_id.clone(),
                    uuid: uuid::Uuid::new_v4().to_string(),
                },
            )));
        }
    }

    /// SubagentStart: a sub-agent of type `agent_type` with id `agent_id` starts (the
    /// sub-agent runtime calls this). Its `additionalContext` is for the sub-agent.
    pub async fn subagent_start(
        &self,
        session: &HookSession,
        agent_id: &str,
        agent_type: &str,
        cancel: &CancellationToken,
    ) -> HookOutcome {
        let fields = json!({"agent_id": agent_id, "agent_type": agent_type});
        self.run(
            HookEvent::SubagentStart,
            Some(agent_type),
            session,
            fields,
            None,
            cancel,
        )
        .await
    }

    /// SubagentStop: a sub-agent ended its turn (the sub-agent runtime calls this with
    /// its transcript); a block means "keep going", with the reason as the next prompt.
    pub async fn subagent_stop(
        &self,
        session: &HookSession,
        agent_id: &str,
        agent_type: &str,
        agent_transcript_path: &std::path::Path,
        stop_hook_active: bool,
        cancel: &CancellationToken,
    ) -> HookOutcome {
        let fields = json!({
            "agent_id": agent_id,
            "agent_type": agent_type,
            "agent_transcript_path": agent_transcript_path,
            "stop_hook_active": stop_hook_active,
        });
        self.run(
            HookEvent::SubagentStop,
            Some(agent_type),
            session,
            fields,
            None,
            cancel,
        )
        .await
    }

    /// PreCompact: the conversation is about to be compacted (`trigger`: `manual` or
    /// `auto`); the compaction's owner calls this.
    pub async fn pre_compact(
        &self,
        session: &HookSession,
        trigger: &str,
        custom_instructions: Option<&str>,
        cancel: &CancellationToken,
    ) -> HookOutcome {
        let fields = json!({"trigger": trigger, "custom_instructions": custom_instructions});
        self.run(
            HookEvent::PreCompact,
            Some(trigger),
            session,
            fields,
            None,
            cancel,
        )
        .await
    }

    /// Notification: the user is told `message` (`notification_type`, e.g.
    /// `permission_prompt`).
    pub async fn notification(
        &self,
        session: &HookSession,
        message: &str,
        notification_type: &str,
        cancel: &CancellationToken,
    ) -> HookOutcome {
        let fields = json!({"message": message, "notification_type": notification_type});
        self.run(
            HookEvent::Notification,
            Some(notification_type),
            session,
            fields,
            None,
            cancel,
        )
        .await
    }
}

/// The JSON a hook receives: the session's fields, the event's name, then `fields`.
fn input(event: HookEvent, session: &HookSession, fields: Value) -> Value {
    let mut map = Map::new();
    map.insert("session_id".into(), session.session_id.clone().into());
    map.insert(
        "transcript_path".into(),
        session
            .transcript_path
            .to_string_lossy()
            .into_owned()
            .into(),
    );
    map.insert(
        "cwd".into(),
        session.cwd.to_string_lossy().into_owned().into(),
    );
    map.insert(
        "permission_mode".into(),
        session.permission_mode.clone().into(),
    );
    map.insert("hook_event_name".into(), event.as_str().into());
    if let Value::Object(fields) = fields {
        map.extend(fields);
    }
    Value::Object(map)
}

/// One hook's run: its outcome and what the lifecycle messages report.
pub(crate) struct Ran {
    pub(crate) outcome: HookOutcome,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) exit_code: Option<i32>,
    /// `success`, `error`, `timeout`, `cancelled`.
    pub(crate) status: &'static str,
}

impl Ran {
    fn with_status(error: String, status: &'static str) -> Self {
        Self {
            outcome: HookOutcome {
                errors: vec![error.clone()],
                ..HookOutcome::default()
            },
            stdout: String::new(),
            stderr: error,
            exit_code: None,
            status,
        }
    }

    pub(crate) fn error(error: String) -> Self {
        Self::with_status(error, "error")
    }

    pub(crate) fn timeout(error: String) -> Self {
        Self::with_status(error, "timeout")
    }

    pub(crate) fn cancelled() -> Self {
        Self {
            outcome: HookOutcome::default(),
            stdout: String::new(),
            stderr: String::new(),
            exit_code: None,
            status: "cancelled",
        }
    }
}

/// `1.5s`, for messages.
pub(crate) fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

#[cfg(test)]
mod tests;
