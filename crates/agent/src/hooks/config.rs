//! Which hooks are registered: the `hooks` key of the settings files and the callbacks an
//! SDK client registers at `initialize`, both in the reference agent's shape:
//!
//! ```json
//! {"PreToolUse": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}
//! {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"], "timeout": 60}]}
//! ```
//!
//! A matcher is a tool name (or, for the events that have one, the session-start source,
//! the compaction trigger, the notification type, the sub-agent type); `|` separates
//! alternatives and any other regular expression is matched against the whole value;
//! an empty matcher, `*` or none matches everything. A registration that cannot be used
//! (an unknown event, a matcher that is not a valid expression, a command that is not a
//! string) is reported once with where it is and skipped: the others still run.
//!
//! `onFailure` (on a command hook, or on a callback matcher group) says what a hook that
//! fails does: `"continue"` (the default) reports it and lets the action go ahead;
//! `"block"` counts the failure as a block, as exit code 2 would, so the tool call, prompt
//! or permission request the event guards is refused — a guard that cannot answer fails
//! closed. A value other than those two is reported and read as `"block"`, for the same
//! reason.

use std::time::Duration;

use serde_json::Value;

use super::HookEvent;

/// How long a hook may run when its registration names no timeout (the reference's
/// default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A hook matcher that is not a valid pattern.
#[derive(Debug, thiserror::Error)]
#[error("matcher {text:?} is not a valid pattern: {source}")]
pub struct MatcherError {
    /// The matcher as written.
    pub text: String,
    /// Why the pattern does not compile.
    #[source]
    pub source: regex::Error,
}

/// What decides whether a registration applies to one run of its event.
#[derive(Clone, Debug)]
pub struct Matcher {
    /// As written.
    pub text: String,
    /// `None`: matches everything.
    regex: Option<regex::Regex>,
}

impl Matcher {
    /// Parses `text` (see the module docs).
    pub fn new(text: &str) -> Result<Self, MatcherError> {
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed == "*" {
            return Ok(Self {
                text: text.to_owned(),
                regex: None,
            });
        }
        regex::Regex::new(&format!("^(?:{trimmed})$"))
            .map(|re| Self {
                text: text.to_owned(),
                regex: Some(re),
            })
            .map_err(|source| MatcherError {
                text: text.to_owned(),
                source,
            })
    }

    /// Whether it applies to `value` (`None`: the event has nothing to match, so only a
    /// match-everything matcher applies).
    pub fn matches(&self, value: Option<&str>) -> bool {
        match (&self.regex, value) {
            (None, _) => true,
            (Some(re), Some(value)) => re.is_match(value),
            (Some(_), None) => false,
        }
    }
}

/// One hook to run.
#[derive(Clone, Debug)]
pub enum HookAction {
    /// A shell command (`{"type":"command","command":…}`).
    Command {
        /// The command line, run with `sh -c`.
        command: String,
    },
    /// An SDK callback, called with a `hook_callback` control request.
    Callback {
        /// The id the client registered.
        callback_id: String,
    },
}

/// What a hook that fails (cannot start, times out, exits with a code other than 0 or 2,
/// prints JSON that does not parse; a callback the client answers with an error) does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// Reported; the action goes ahead.
    #[default]
    Continue,
    /// Counts as a block of the action the event guards.
    Block,
}

/// A hook with the matcher that selects it.
#[derive(Clone, Debug)]
pub struct Registration {
    /// The event it runs on.
    pub event: HookEvent,
    /// Which runs of the event it applies to.
    pub matcher: Matcher,
    /// What runs.
    pub action: HookAction,
    /// How long it may take.
    pub timeout: Duration,
    /// What its failure does.
    pub on_failure: OnFailure,
}

/// Reads the `hooks` object of a settings file (`origin` names the file in problems).
/// Returns the registrations and one line per problem.
pub fn from_settings(hooks: &Value, origin: &str) -> (Vec<Registration>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    each_group(
        hooks,
        origin,
        &mut problems,
        |event, matcher, group, at, problems| {
            let Some(list) = group.get("hooks").and_then(Value::as_array) else {
                problems.push(format!("{at}: expected \"hooks\": [ … ] (a list of hooks)"));
                return;
            };
            for (j, hook) in list.iter().enumerate() {
                let at = format!("{at}.hooks[{j}]");
                let kind = hook
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("command");
                if kind != "command" {
                    problems.push(format!(
                        "{at}: hooks of type {kind:?} are not supported; only \"command\" hooks run"
                    ));
                    continue;
                }
                let Some(command) = hook.get("command").and_then(Value::as_str) else {
                    problems.push(format!("{at}: expected \"command\": \"…\" (a string)"));
                    continue;
                };
                out.push(Registration {
                    event,
                    matcher: matcher.clone(),
                    action: HookAction::Command {
                        command: command.to_owned(),
                    },
                    timeout: timeout(hook),
                    on_failure: on_failure(hook, &at, problems),
                });
            }
        },
    );
    (out, problems)
}

/// Reads the `hooks` of an SDK client's `initialize` request.
pub fn from_initialize(hooks: &Value) -> (Vec<Registration>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    each_group(
        hooks,
        "initialize.hooks",
        &mut problems,
        |event, matcher, group, at, problems| {
            let Some(ids) = group.get("hookCallbackIds").and_then(Value::as_array) else {
                problems.push(format!("{at}: expected \"hookCallbackIds\": [ … ]"));
                return;
            };
            let on_failure = on_failure(group, at, problems);
            for id in ids {
                let Some(id) = id.as_str() else {
                    problems.push(format!("{at}: a hook callback id must be a string"));
                    continue;
                };
                out.push(Registration {
                    event,
                    matcher: matcher.clone(),
                    action: HookAction::Callback {
                        callback_id: id.to_owned(),
                    },
                    timeout: timeout(group),
                    on_failure,
                });
            }
        },
    );
    (out, problems)
}

/// Calls `f` for every matcher group of every known event in `hooks`.
fn each_group(
    hooks: &Value,
    origin: &str,
    problems: &mut Vec<String>,
    mut f: impl FnMut(HookEvent, &Matcher, &Value, &str, &mut Vec<String>),
) {
    let Some(events) = hooks.as_object() else {
        if !hooks.is_null() {
            problems.push(format!(
                "{origin}: \"hooks\" must be an object of events (PreToolUse, Stop, …)"
            ));
        }
        return;
    };
    for (name, groups) in events {
        let Some(event) = HookEvent::parse(name) else {
            problems.push(format!(
                "{origin}: unknown hook event {name:?}; known events: {}",
                HookEvent::ALL.map(HookEvent::as_str).join(", ")
            ));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            problems.push(format!(
                "{origin}.{name}: expected a list of matcher groups"
            ));
            continue;
        };
        for (i, group) in groups.iter().enumerate() {
            let at = format!("{origin}.{name}[{i}]");
            let text = group.get("matcher").and_then(Value::as_str).unwrap_or("");
            match Matcher::new(text) {
                Ok(matcher) => f(event, &matcher, group, &at, problems),
                Err(e) => problems.push(format!("{at}: {e}")),
            }
        }
    }
}

/// A registration's `onFailure`; a value that is not `"continue"` or `"block"` is
/// reported and read as `"block"` (fail closed).
fn on_failure(value: &Value, at: &str, problems: &mut Vec<String>) -> OnFailure {
    match value.get("onFailure") {
        None | Some(Value::Null) => OnFailure::Continue,
        Some(Value::String(s)) if s == "continue" => OnFailure::Continue,
        Some(Value::String(s)) if s == "block" => OnFailure::Block,
        Some(other) => {
            problems.push(format!(
                "{at}: \"onFailure\" must be \"continue\" or \"block\", not {other}; \
                 read as \"block\""
            ));
            OnFailure::Block
        }
    }
}

/// A registration's `timeout` in seconds, else the default.
fn timeout(value: &Value) -> Duration {
    value
        .get("timeout")
        .and_then(Value::as_f64)
        .filter(|t| t.is_finite() && *t > 0.0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matchers_are_names_alternatives_or_whole_value_patterns() {
        let m = Matcher::new("Edit|Write").unwrap();
        assert!(m.matches(Some("Edit")) && m.matches(Some("Write")));
        assert!(
            !m.matches(Some("MultiEdit")),
            "anchored: a part does not match"
        );
        assert!(Matcher::new("").unwrap().matches(None));
        assert!(Matcher::new("*").unwrap().matches(Some("Bash")));
        assert!(Matcher::new("mcp__.*").unwrap().matches(Some("mcp__x__y")));
        assert!(!Matcher::new("Bash").unwrap().matches(None));
        assert!(
            Matcher::new("(")
                .unwrap_err()
                .to_string()
                .contains("not a valid pattern")
        );
    }

    #[test]
    fn bad_registrations_are_reported_and_the_rest_kept() {
        let (regs, problems) = from_settings(
            &json!({
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": "true", "timeout": 5}]},
                    {"matcher": "(", "hooks": []},
                    {"hooks": [{"type": "command"}]}
                ],
                "OnLunch": []
            }),
            "settings.json",
        );
        assert_eq!(regs.len(), 1);
        assert_eq!(regs[0].timeout, Duration::from_secs(5));
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("OnLunch")));
        assert!(
            problems
                .iter()
                .any(|p| p.contains("PreToolUse[2].hooks[0]") && p.contains("command"))
        );
    }

    #[test]
    fn initialize_callbacks_register_by_id() {
        let (regs, problems) = from_initialize(&json!({
            "PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0", "hook_1"]}],
            "Stop": [{"hookCallbackIds": ["hook_2"], "timeout": 2}]
        }));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(regs.len(), 3);
        assert!(
            matches!(&regs[2].action, HookAction::Callback { callback_id } if callback_id == "hook_2")
        );
        assert_eq!(regs[2].timeout, Duration::from_secs(2));
    }
}
