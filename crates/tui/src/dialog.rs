//! The permission dialog: a tool call waits for the user's answer.
//!
//! Three choices, as in the reference agent: "Yes"; "Yes, and don't ask again for
//! `<rule>`" (the prompt's suggested permission updates sent back with the answer, which
//! the engine applies and writes where they say — a Bash rule to the project's
//! `.strata/settings.local.json`); "No, and tell strata what to do differently" (the
//! call is denied, the turn stops, and the prompt is free for the user's instruction).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use strata_agent::engine::PermissionPrompt;
use strata_protocol::sdk::{PermissionResult, PermissionUpdate};
use tokio::sync::oneshot;

/// What the user may answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Run it once.
    Yes,
    /// Run it and keep the suggested updates (`label` names them).
    Always(String),
    /// Do not run it; stop and let the user say what to do.
    No,
}

/// An open permission dialog.
#[derive(Debug)]
pub struct PermissionDialog {
    /// What is asked.
    pub prompt: PermissionPrompt,
    /// The choices in order.
    pub choices: Vec<Choice>,
    /// The highlighted choice.
    pub selected: usize,
    reply: Option<oneshot::Sender<PermissionResult>>,
}

impl PermissionDialog {
    /// A dialog for `prompt`, answered through `reply`.
    pub fn new(prompt: PermissionPrompt, reply: oneshot::Sender<PermissionResult>) -> Self {
        let mut choices = vec![Choice::Yes];
        if let Some(label) = always_label(&prompt.suggestions) {
            choices.push(Choice::Always(label));
        }
        choices.push(Choice::No);
        Self {
            prompt,
            choices,
            selected: 0,
            reply: Some(reply),
        }
    }

    /// Highlight the previous choice.
    pub fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    /// Highlight the next choice.
    pub fn down(&mut self) {
        self.selected = (self.selected + 1).min(self.choices.len() - 1);
    }

    /// The choice a digit key names (1-based).
    pub fn choice_for_digit(&self, digit: u32) -> Option<usize> {
        let i = usize::try_from(digit).ok()?.checked_sub(1)?;
        (i < self.choices.len()).then_some(i)
    }

    /// Answers with choice `index` and closes the dialog. Returns the choice.
    pub fn answer(mut self, index: usize) -> Choice {
        let choice = self.choices.get(index).cloned().unwrap_or(Choice::No);
        let result = match &choice {
            Choice::Yes => PermissionResult::Allow {
                updated_input: None,
                updated_permissions: None,
            },
            Choice::Always(_) => PermissionResult::Allow {
                updated_input: None,
                updated_permissions: Some(
                    self.prompt
                        .suggestions
                        .iter()
                        .filter_map(|u| serde_json::to_value(u).ok())
                        .collect(),
                ),
            },
            Choice::No => PermissionResult::Deny {
                message: "The user doesn't want to proceed with this tool use. The tool use \
                          was rejected. STOP what you are doing and wait for the user to tell \
                          you how to proceed."
                    .to_owned(),
                interrupt: true,
            },
        };
        if let Some(reply) = self.reply.take() {
            // The turn may have ended meanwhile (interrupted): nobody waits then.
            let _ = reply.send(result);
        }
        choice
    }

    /// Whether the engine stopped waiting (the turn was interrupted).
    pub fn abandoned(&self) -> bool {
        self.reply.as_ref().is_none_or(oneshot::Sender::is_closed)
    }

    /// The dialog's lines.
    pub fn render(&self, width: u16) -> Vec<Line<'static>> {
        let accent = Style::default().fg(Color::Yellow);
        // Every line is wrapped, never cut: on a narrow terminal the rule a choice would
        // approve must still be read whole.
        let w = usize::from(width);
        let mut lines: Vec<Line<'static>> =
            crate::text::wrap(&format!("{} wants to run", self.prompt.tool_name), w)
                .into_iter()
                .map(|l| Line::from(Span::styled(l, accent.add_modifier(Modifier::BOLD))))
                .collect();
        let subject = subject(&self.prompt);
        for l in crate::text::wrap(&subject, usize::from(width).saturating_sub(4))
            .into_iter()
            .take(6)
        {
            lines.push(Line::from(format!("  {l}")));
        }
        if !self.prompt.reason.is_empty() {
            for l in crate::text::wrap(&self.prompt.reason, w.saturating_sub(2)) {
                lines.push(Line::styled(
                    format!("  {l}"),
                    Style::default().fg(Color::DarkGray),
                ));
            }
        }
        lines.extend(
            crate::text::wrap("Do you want to proceed?", w)
                .into_iter()
                .map(Line::from),
        );
        for (i, c) in self.choices.iter().enumerate() {
            let text = match c {
                Choice::Yes => "Yes".to_owned(),
                Choice::Always(label) => format!("Yes, and don't ask again for {label}"),
                Choice::No => "No, and tell strata what to do differently (esc)".to_owned(),
            };
            let marker = if i == self.selected { "❯" } else { " " };
            let style = if i == self.selected {
                Style::default().fg(Color::Cyan)
            } else {
                Style::default()
            };
            let head = format!("{marker} {}. ", i + 1);
            let indent = " ".repeat(head.chars().count());
            for (k, l) in crate::text::wrap(&text, w.saturating_sub(indent.len()))
                .into_iter()
                .enumerate()
            {
                let lead = if k == 0 {
                    head.as_str()
                } else {
                    indent.as_str()
                };
                lines.push(Line::styled(format!("{lead}{l}"), style));
            }
        }
        lines
    }
}

/// What the call does, in one line: a Bash command, a file path, else the input.
fn subject(p: &PermissionPrompt) -> String {
    for key in ["command", "file_path", "path", "pattern"] {
        if let Some(v) = p.input.get(key).and_then(|v| v.as_str()) {
            return v.to_owned();
        }
    }
    p.input.to_string()
}

/// The rule names the "don't ask again" choice shows, or `None` when nothing is offered.
fn always_label(updates: &[PermissionUpdate]) -> Option<String> {
    let mut parts = Vec::new();
    for u in updates {
        match u {
            PermissionUpdate::AddRules { rules, .. } => {
                for r in rules {
                    parts.push(match &r.rule_content {
                        Some(c) => format!("{}({c})", r.tool_name),
                        None => r.tool_name.clone(),
                    });
                }
            }
            PermissionUpdate::SetMode { mode, .. } if mode == "acceptEdits" => {
                parts.push("edits this session".to_owned());
            }
            _ => {}
        }
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use strata_protocol::sdk::{PermissionRuleValue, RuleBehaviorName, UpdateDestination};

    fn prompt(suggestions: Vec<PermissionUpdate>) -> PermissionPrompt {
        PermissionPrompt {
            tool_name: "Bash".into(),
            input: serde_json::json!({"command": "touch x"}),
            tool_use_id: "t1".into(),
            reason: String::new(),
            suggestions,
        }
    }

    fn bash_rule() -> PermissionUpdate {
        PermissionUpdate::AddRules {
            rules: vec![PermissionRuleValue {
                tool_name: "Bash".into(),
                rule_content: Some("touch:*".into()),
            }],
            behavior: RuleBehaviorName::Allow,
            destination: UpdateDestination::LocalSettings,
        }
    }

    #[test]
    fn dont_ask_again_sends_the_suggested_rule_back_with_the_answer() {
        let (tx, mut rx) = oneshot::channel();
        let d = PermissionDialog::new(prompt(vec![bash_rule()]), tx);
        assert_eq!(d.choices[1], Choice::Always("Bash(touch:*)".into()));
        d.answer(1);
        let PermissionResult::Allow {
            updated_permissions: Some(p),
            ..
        } = rx.try_recv().unwrap()
        else {
            panic!("not an allow with updates");
        };
        assert_eq!(p[0]["destination"], "localSettings");
    }

    #[test]
    fn no_denies_and_stops_the_turn() {
        let (tx, mut rx) = oneshot::channel();
        let d = PermissionDialog::new(prompt(Vec::new()), tx);
        assert_eq!(d.choices, [Choice::Yes, Choice::No], "no rule to offer");
        d.answer(1);
        assert!(matches!(
            rx.try_recv().unwrap(),
            PermissionResult::Deny {
                interrupt: true,
                ..
            }
        ));
    }
}
