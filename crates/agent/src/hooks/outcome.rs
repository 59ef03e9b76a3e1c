//! What hooks decided: one hook's answer read from its exit code and output, and the
//! answers of every hook of one event combined.
//!
//! The reference agent's rules: exit code 0 is success (stdout that is a JSON object is a
//! decision; other stdout is context for `UserPromptSubmit` and `SessionStart`); exit
//! code 2 blocks, and stderr is what the model (or the user) is told; any other exit
//! code is a non-blocking error, reported and otherwise ignored. A decision object may
//! carry `continue: false` (+ `stopReason`), `decision: "block"|"approve"` (+ `reason`),
//! `systemMessage`, and `hookSpecificOutput` with `permissionDecision`
//! (`allow`/`deny`/`ask`, + `permissionDecisionReason`), `updatedInput`,
//! `additionalContext`, or, for `PermissionRequest`, `decision: {behavior, …}`.
//!
//! Combining: any block or deny wins over allow, the first reason is kept; `ask` wins
//! over `allow` (security fails closed); the last `updatedInput` is used; contexts and
//! messages are all kept, in registration order.

use serde_json::Value;

/// A permission decision a hook made (PreToolUse's `permissionDecision`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookPermission {
    /// Run without asking (deny rules still apply).
    Allow,
    /// Ask, whatever the rules say.
    Ask,
    /// Do not run.
    Deny,
}

/// A `PermissionRequest` hook's answer to the prompt it saw.
#[derive(Clone, Debug, PartialEq)]
pub enum PromptDecision {
    /// Allowed, possibly with a changed input.
    Allow {
        /// The input to run with.
        updated_input: Option<Value>,
    },
    /// Denied.
    Deny {
        /// Why, for the model.
        message: String,
        /// Also stop the turn.
        interrupt: bool,
    },
}

/// What the hooks of one event decided, combined.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HookOutcome {
    /// Blocked (exit code 2, `decision: "block"`, `permissionDecision: "deny"`): why.
    pub blocked: Option<String>,
    /// PreToolUse's permission decision (a block is reported in `blocked` as well).
    pub permission: Option<HookPermission>,
    /// Why the permission decision was made.
    pub permission_reason: Option<String>,
    /// The input to use instead of the model's.
    pub updated_input: Option<Value>,
    /// Text for the model (`additionalContext`, or plain stdout where that counts).
    pub additional_context: Vec<String>,
    /// `continue: false`: stop the session's turn, with this reason.
    pub stop: Option<String>,
    /// `systemMessage`s, for the user.
    pub system_messages: Vec<String>,
    /// PermissionRequest's decision.
    pub prompt_decision: Option<PromptDecision>,
    /// Hooks that failed or timed out, one line each (reported; they block only when set
    /// to `onFailure: "block"`).
    pub errors: Vec<String>,
}

impl HookOutcome {
    /// Adds one hook's answer (see the module docs for how answers combine).
    pub(crate) fn merge(&mut self, other: HookOutcome) {
        if self.blocked.is_none() {
            self.blocked = other.blocked;
        }
        self.permission = match (self.permission.take(), other.permission) {
            (Some(HookPermission::Deny), _) | (_, Some(HookPermission::Deny)) => {
                Some(HookPermission::Deny)
            }
            (Some(HookPermission::Ask), _) | (_, Some(HookPermission::Ask)) => {
                Some(HookPermission::Ask)
            }
            (a, b) => b.or(a),
        };
        if self.permission_reason.is_none() {
            self.permission_reason = other.permission_reason;
        }
        if other.updated_input.is_some() {
            self.updated_input = other.updated_input;
        }
        self.additional_context.extend(other.additional_context);
        if self.stop.is_none() {
            self.stop = other.stop;
        }
        self.system_messages.extend(other.system_messages);
        self.prompt_decision = match (self.prompt_decision.take(), other.prompt_decision) {
            (Some(deny @ PromptDecision::Deny { .. }), _) => Some(deny),
            (a, b) => b.or(a),
        };
        self.errors.extend(other.errors);
    }

    /// The additional context as one text, if there is any.
    pub fn context_text(&self) -> Option<String> {
        (!self.additional_context.is_empty()).then(|| self.additional_context.join("\n"))
    }
}

/// Reads a decision object (a command hook's JSON stdout, a callback's answer).
pub(crate) fn from_json(value: &Value) -> HookOutcome {
    let mut out = HookOutcome::default();
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    if value.get("continue").and_then(Value::as_bool) == Some(false) {
        out.stop = Some(
            text(value.get("stopReason")).unwrap_or_else(|| "a hook stopped the session".into()),
        );
    }
    if let Some(message) = text(value.get("systemMessage")) {
        out.system_messages.push(message);
    }
    match value.get("decision").and_then(Value::as_str) {
        Some("block") => {
            out.blocked =
                Some(text(value.get("reason")).unwrap_or_else(|| "Blocked by a hook.".to_owned()));
        }
        Some("approve") => out.permission = Some(HookPermission::Allow),
        _ => {}
    }
    let Some(specific) = value.get("hookSpecificOutput").filter(|v| v.is_object()) else {
        return out;
    };
    let reason = text(specific.get("permissionDecisionReason"));
    match specific.get("permissionDecision").and_then(Value::as_str) {
        Some("allow") => out.permission = Some(HookPermission::Allow),
        Some("ask") => out.permission = Some(HookPermission::Ask),
        Some("deny") => {
            out.permission = Some(HookPermission::Deny);
            out.blocked = Some(
                reason
                    .clone()
                    .unwrap_or_else(|| "Denied by a PreToolUse hook.".to_owned()),
            );
        }
        _ => {}
    }
    out.permission_reason = reason;
    if let Some(input) = specific.get("updatedInput").filter(|v| v.is_object()) {
        out.updated_input = Some(input.clone());
    }
    if let Some(context) = text(specific.get("additionalContext")) {
        out.additional_context.push(context);
    }
    if let Some(decision) = specific.get("decision").filter(|v| v.is_object()) {
        out.prompt_decision = match decision.get("behavior").and_then(Value::as_str) {
            Some("allow") => Some(PromptDecision::Allow {
                updated_input: decision
                    .get("updatedInput")
                    .filter(|v| v.is_object())
                    .cloned(),
            }),
            Some("deny") => Some(PromptDecision::Deny {
                message: text(decision.get("message"))
                    .unwrap_or_else(|| "Denied by a PermissionRequest hook.".into()),
                interrupt: decision.get("interrupt").and_then(Value::as_bool) == Some(true),
            }),
            _ => None,
        };
    }
    out
}

/// Reads a command hook's result (see the module docs). `stdout_is_context`: the event
/// takes plain stdout as context for the model.
pub(crate) fn from_command(
    exit_code: i32,
    stdout: &str,
    stderr: &str,
    stdout_is_context: bool,
    name: &str,
) -> HookOutcome {
    match exit_code {
        0 => {
            let trimmed = stdout.trim();
            if trimmed.starts_with('{') {
                return match serde_json::from_str::<Value>(trimmed) {
                    Ok(value) => from_json(&value),
                    // Meant as a decision but unreadable: a failure, not context.
                    Err(e) => HookOutcome {
                        errors: vec![format!("{name} hook printed JSON that does not parse: {e}")],
                        ..HookOutcome::default()
                    },
                };
            }
            let mut out = HookOutcome::default();
            if stdout_is_context && !trimmed.is_empty() {
                out.additional_context.push(trimmed.to_owned());
            }
            out
        }
        2 => HookOutcome {
            blocked: Some(if stderr.trim().is_empty() {
                format!("{name} hook blocked this (exit code 2, no message)")
            } else {
                stderr.trim().to_owned()
            }),
            ..HookOutcome::default()
        },
        code => HookOutcome {
            errors: vec![format!(
                "{name} hook failed with exit code {code}{}",
                if stderr.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", stderr.trim())
                }
            )],
            ..HookOutcome::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exit_code_2_blocks_with_stderr_and_other_codes_are_reported_errors() {
        let out = from_command(2, "", "no rm here\n", false, "PreToolUse");
        assert_eq!(out.blocked.as_deref(), Some("no rm here"));
        let out = from_command(1, "", "boom", false, "PreToolUse");
        assert!(out.blocked.is_none());
        assert!(out.errors[0].contains("exit code 1") && out.errors[0].contains("boom"));
        let out = from_command(0, "remember X\n", "", true, "UserPromptSubmit");
        assert_eq!(out.context_text().as_deref(), Some("remember X"));
        assert!(
            from_command(0, "ignored", "", false, "PostToolUse")
                .additional_context
                .is_empty()
        );
    }

    #[test]
    fn json_decisions_are_read() {
        let out = from_json(&json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": "not today"}}));
        assert_eq!(out.permission, Some(HookPermission::Deny));
        assert_eq!(out.blocked.as_deref(), Some("not today"));
        let out = from_json(&json!({"continue": false, "stopReason": "enough",
            "hookSpecificOutput": {"updatedInput": {"command": "ls"}, "additionalContext": "ctx"}}));
        assert_eq!(out.stop.as_deref(), Some("enough"));
        assert_eq!(out.updated_input, Some(json!({"command": "ls"})));
        assert_eq!(out.additional_context, vec!["ctx".to_owned()]);
        let out = from_json(
            &json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "m", "interrupt": true}}}),
        );
        assert_eq!(
            out.prompt_decision,
            Some(PromptDecision::Deny {
                message: "m".into(),
                interrupt: true
            })
        );
    }

    #[test]
    fn combining_keeps_the_strictest_decision() {
        let mut all = from_json(&json!({"hookSpecificOutput": {"permissionDecision": "allow"}}));
        all.merge(from_json(
            &json!({"hookSpecificOutput": {"permissionDecision": "ask"}}),
        ));
        assert_eq!(all.permission, Some(HookPermission::Ask));
        all.merge(from_json(&json!({"decision": "block", "reason": "r"})));
        all.merge(from_json(
            &json!({"hookSpecificOutput": {"permissionDecision": "deny"}}),
        ));
        assert_eq!(all.permission, Some(HookPermission::Deny));
        assert_eq!(all.blocked.as_deref(), Some("r"));
    }
}
