//! The AskUserQuestion dialog (issue 18, item 4): the model's one to four questions,
//! each with its options, answered in the UI and sent back to the tool.
//!
//! The tool's question arrives as its permission prompt (`Tool::asks_the_user`); the
//! dialog answers that prompt the way the SDK clients do: approved, with an updated
//! input carrying `{"questions": […], "answers": {"<question>": "<answer>"}}` (a
//! multi-select's labels joined by `", "`, the tool's rule). Every question also offers
//! "Other", where the user types their own answer, as the reference agent does. Esc
//! declines: the call is denied and the turn stops, so the user can say what they want.
//!
//! Keys: ↑↓ move; Enter picks (single choice) or confirms the ticked options (multiple
//! choice); Space ticks an option of a multiple choice; 1–9 pick or tick by number;
//! ←/→ go back to an earlier question or on to the next; on "Other" the keys type the
//! answer. A single question's answer goes to the tool at once. With several, the last
//! answer opens the review (as the reference agent's dialog does): each question with
//! the answer chosen, where Enter on a question goes back to change it (and its new
//! answer returns to the review), "Submit answers" sends them and "Cancel" (or Esc)
//! declines; → from the last question also opens it.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use strata_agent::engine::PermissionPrompt;
use strata_agent::tools::Question;
use strata_protocol::sdk::PermissionResult;
use tokio::sync::oneshot;

use crate::text::{cut_to_width, wrap};

/// The tool whose prompts this dialog answers.
pub const TOOL: &str = "AskUserQuestion";

/// What a key did to the dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskOutcome {
    /// Still open.
    Open,
    /// Every question is answered: the answers were sent.
    Answered,
    /// The user declined (Esc): the call was denied.
    Declined,
}

/// One question's state.
#[derive(Debug, Clone, Default)]
struct State {
    /// The highlighted row (the options, then "Other").
    cursor: usize,
    /// Ticked options of a multiple choice.
    ticked: Vec<bool>,
    /// The "Other" text.
    other: String,
    /// The answer given, once given.
    answer: Option<String>,
}

/// An open AskUserQuestion dialog.
#[derive(Debug)]
pub struct AskDialog {
    questions: Vec<Question>,
    states: Vec<State>,
    current: usize,
    /// The review is shown (several questions only), with its highlighted row: a
    /// question (`0..n`), then "Submit answers" (`n`) and "Cancel" (`n + 1`).
    review: Option<usize>,
    input: Value,
    reply: Option<oneshot::Sender<PermissionResult>>,
}

impl AskDialog {
    /// The dialog for `prompt` (an AskUserQuestion call), answered through `reply`.
    /// `Err` gives the reply back when the input holds no question the dialog can show
    /// (the tool checks its input before it asks, so this is a defect, shown as a
    /// plain permission dialog instead).
    pub fn new(
        prompt: &PermissionPrompt,
        reply: oneshot::Sender<PermissionResult>,
    ) -> Result<Self, oneshot::Sender<PermissionResult>> {
        let questions: Vec<Question> = match prompt
            .input
            .get("questions")
            .cloned()
            .map(serde_json::from_value)
        {
            Some(Ok(q)) => q,
            _ => return Err(reply),
        };
        if questions.is_empty() || questions.iter().any(|q| q.options.is_empty()) {
            return Err(reply);
        }
        let states = questions
            .iter()
            .map(|q| State {
                ticked: vec![false; q.options.len()],
                ..State::default()
            })
            .collect();
        Ok(Self {
            questions,
            states,
            current: 0,
            review: None,
            input: prompt.input.clone(),
            reply: Some(reply),
        })
    }

    /// Whether the engine stopped waiting (the turn was interrupted).
    pub fn abandoned(&self) -> bool {
        self.reply.as_ref().is_none_or(oneshot::Sender::is_closed)
    }

    fn question(&self) -> &Question {
        &self.questions[self.current]
    }

    fn state(&mut self) -> &mut State {
        &mut self.states[self.current]
    }

    /// Rows of the current question: its options, then "Other".
    fn rows(&self) -> usize {
        self.question().options.len() + 1
    }

    fn on_other(&self) -> bool {
        self.states[self.current].cursor == self.question().options.len()
    }

    /// Whether the review of the answers is shown.
    pub fn reviewing(&self) -> bool {
        self.review.is_some()
    }

    /// A key typed while the dialog is open.
    pub fn on_key(&mut self, key: crossterm::event::KeyEvent) -> AskOutcome {
        use crossterm::event::{KeyCode, KeyModifiers};
        if let Some(row) = self.review {
            return self.on_review_key(key, row);
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let multi = self.question().multi_select;
        match key.code {
            KeyCode::Esc => return self.decline(),
            KeyCode::Char('c') if ctrl => return self.decline(),
            KeyCode::Up => {
                let s = self.state();
                s.cursor = s.cursor.saturating_sub(1);
            }
            KeyCode::Down | KeyCode::Tab => {
                let last = self.rows() - 1;
                let s = self.state();
                s.cursor = (s.cursor + 1).min(last);
            }
            KeyCode::Left if !self.on_other() || self.states[self.current].other.is_empty() => {
                self.current = self.current.saturating_sub(1);
            }
            KeyCode::Right if !self.on_other() || self.states[self.current].other.is_empty() => {
                if self.current + 1 < self.questions.len() {
                    self.current += 1;
                } else if self.questions.len() > 1 {
                    self.open_review();
                }
            }
            KeyCode::Enter => return self.confirm(),
            KeyCode::Backspace if self.on_other() => {
                self.state().other.pop();
            }
            KeyCode::Char(c) if self.on_other() && !ctrl => self.state().other.push(c),
            KeyCode::Char(' ') if multi => {
                let i = self.states[self.current].cursor;
                let s = self.state();
                s.ticked[i] = !s.ticked[i];
            }
            KeyCode::Char(c) if c.is_ascii_digit() && !ctrl => {
                let n = c.to_digit(10).and_then(|d| usize::try_from(d).ok());
                if let Some(i) = n.and_then(|d| d.checked_sub(1))
                    && i < self.rows()
                {
                    self.state().cursor = i;
                    if i < self.question().options.len() {
                        if multi {
                            let s = self.state();
                            s.ticked[i] = !s.ticked[i];
                        } else {
                            return self.confirm();
                        }
                    }
                }
            }
            _ => {}
        }
        AskOutcome::Open
    }

    /// Enter: the current question's answer, then the next unanswered question or, when
    /// none is left, the answers sent.
    fn confirm(&mut self) -> AskOutcome {
        let q = self.question().clone();
        let on_other = self.on_other();
        let s = self.state();
        let other = s.other.trim().to_owned();
        let answer = if q.multi_select {
            let mut picked: Vec<String> = q
                .options
                .iter()
                .zip(&s.ticked)
                .filter(|(_, t)| **t)
                .map(|(o, _)| o.label.clone())
                .collect();
            if !other.is_empty() {
                picked.push(other);
            }
            if picked.is_empty() && !on_other {
                // Enter on an option with nothing ticked: that option.
                picked.push(q.options[s.cursor].label.clone());
            }
            picked.join(", ")
        } else if on_other {
            other
        } else {
            q.options[s.cursor].label.clone()
        };
        if answer.is_empty() {
            // "Other" with no text: nothing to send yet.
            return AskOutcome::Open;
        }
        s.answer = Some(answer);
        match self.first_unanswered() {
            Some(next) => {
                self.current = next;
                AskOutcome::Open
            }
            None if self.questions.len() > 1 => {
                self.open_review();
                AskOutcome::Open
            }
            None => {
                self.send();
                AskOutcome::Answered
            }
        }
    }

    fn first_unanswered(&self) -> Option<usize> {
        (0..self.questions.len()).find(|&i| self.states[i].answer.is_none())
    }

    /// The review, "Submit answers" highlighted.
    fn open_review(&mut self) {
        self.review = Some(self.questions.len());
    }

    /// A key on the review, whose highlighted row is `row`.
    fn on_review_key(&mut self, key: crossterm::event::KeyEvent, row: usize) -> AskOutcome {
        use crossterm::event::{KeyCode, KeyModifiers};
        let n = self.questions.len();
        let last = n + 1;
        match key.code {
            KeyCode::Esc => return self.decline(),
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return self.decline();
            }
            KeyCode::Up => self.review = Some(row.saturating_sub(1)),
            KeyCode::Down | KeyCode::Tab => self.review = Some((row + 1).min(last)),
            KeyCode::Left => {
                self.review = None;
                self.current = n - 1;
            }
            KeyCode::Enter if row < n => {
                // Back to that question; its new answer comes back here.
                self.review = None;
                self.current = row;
            }
            KeyCode::Enter if row == n => match self.first_unanswered() {
                Some(missing) => {
                    self.review = None;
                    self.current = missing;
                }
                None => {
                    self.send();
                    return AskOutcome::Answered;
                }
            },
            KeyCode::Enter => return self.decline(),
            _ => {}
        }
        AskOutcome::Open
    }

    /// The answers so far, by question text, in the order asked.
    pub fn answers(&self) -> Vec<(String, String)> {
        self.questions
            .iter()
            .zip(&self.states)
            .filter_map(|(q, s)| s.answer.clone().map(|a| (q.question.clone(), a)))
            .collect()
    }

    fn send(&mut self) {
        let mut input = self.input.clone();
        let answers: serde_json::Map<String, Value> = self
            .answers()
            .into_iter()
            .map(|(q, a)| (q, Value::String(a)))
            .collect();
        input["answers"] = Value::Object(answers);
        if let Some(reply) = self.reply.take() {
            // Nobody waits when the turn ended meanwhile.
            let _ = reply.send(PermissionResult::Allow {
                updated_input: Some(input),
                updated_permissions: None,
            });
        }
    }

    fn decline(&mut self) -> AskOutcome {
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(PermissionResult::Deny {
                message: "The user declined to answer the questions. STOP what you are doing \
                          and wait for the user to tell you how to proceed."
                    .to_owned(),
                interrupt: true,
            });
        }
        AskOutcome::Declined
    }

    /// The dialog's lines at `width`.
    pub fn render(&self, width: u16) -> Vec<Line<'static>> {
        let w = usize::from(width);
        let accent = Style::default().fg(Color::Cyan);
        let dim = Style::default().fg(Color::DarkGray);
        let mut lines = Vec::new();
        // The questions as chips: ticked once answered, the current one highlighted; with
        // several, the review's chip after them.
        let current = Style::default()
            .fg(Color::Black)
            .bg(Color::Cyan)
            .add_modifier(Modifier::BOLD);
        let mut chips = Vec::new();
        for (i, (q, s)) in self.questions.iter().zip(&self.states).enumerate() {
            let mark = if s.answer.is_some() { "☒" } else { "☐" };
            let style = if i == self.current && self.review.is_none() {
                current
            } else {
                dim
            };
            chips.push(Span::styled(format!(" {mark} {} ", q.header), style));
            chips.push(Span::raw(" "));
        }
        if self.questions.len() > 1 {
            let style = if self.review.is_some() { current } else { dim };
            chips.push(Span::styled(" ✔ Submit ", style));
            lines.push(cut(Line::from(chips), w));
        } else if let Some(chip) = chips.into_iter().next() {
            lines.push(cut(Line::from(chip), w));
        }
        if let Some(row) = self.review {
            lines.extend(self.render_review(row, w));
            return lines;
        }
        let q = self.question();
        let s = &self.states[self.current];
        for l in wrap(&q.question, w.max(1)) {
            lines.push(Line::styled(
                l,
                Style::default().add_modifier(Modifier::BOLD),
            ));
        }
        if q.multi_select {
            lines.push(Line::styled("(choose any: space ticks)", dim));
        }
        for (i, o) in q.options.iter().enumerate() {
            let here = s.cursor == i;
            let marker = if here { "❯" } else { " " };
            let tick = if q.multi_select {
                if s.ticked[i] { "[✔] " } else { "[ ] " }
            } else {
                ""
            };
            let style = if here { accent } else { Style::default() };
            let text = format!("{marker} {}. {tick}{}", i + 1, o.label);
            lines.push(Line::styled(cut_to_width(&text, w).to_owned(), style));
            if !o.description.trim().is_empty() {
                for l in wrap(&o.description, w.saturating_sub(5).max(1))
                    .into_iter()
                    .take(2)
                {
                    lines.push(Line::styled(format!("     {l}"), dim));
                }
            }
        }
        let n = q.options.len() + 1;
        let here = s.cursor == q.options.len();
        let marker = if here { "❯" } else { " " };
        let typed = if s.other.is_empty() && !here {
            "Other: type your own answer".to_owned()
        } else {
            format!("Other: {}{}", s.other, if here { "▏" } else { "" })
        };
        lines.push(Line::styled(
            cut_to_width(&format!("{marker} {n}. {typed}"), w).to_owned(),
            if here { accent } else { Style::default() },
        ));
        let hint = if q.multi_select {
            "space tick · enter confirm · ↑↓ move · ←→ questions · esc decline"
        } else {
            "enter select · ↑↓ move · ←→ questions · esc decline"
        };
        lines.push(Line::styled(cut_to_width(hint, w).to_owned(), dim));
        lines
    }
}

impl AskDialog {
    /// The review's lines below the chips: each question and its answer, then the two
    /// choices; `row` is highlighted.
    fn render_review(&self, row: usize, w: usize) -> Vec<Line<'static>> {
        let accent = Style::default().fg(Color::Cyan);
        let dim = Style::default().fg(Color::DarkGray);
        let mut lines = vec![Line::styled(
            cut_to_width("Review your answers", w).to_owned(),
            Style::default().add_modifier(Modifier::BOLD),
        )];
        for (i, (q, s)) in self.questions.iter().zip(&self.states).enumerate() {
            let here = row == i;
            let marker = if here { "❯" } else { " " };
            let text = format!("{marker} ● {}", q.question);
            lines.push(Line::styled(
                cut_to_width(&text, w).to_owned(),
                if here { accent } else { Style::default() },
            ));
            let (answer, style) = match &s.answer {
                Some(a) => (format!("→ {a}"), Style::default().fg(Color::Green)),
                None => ("→ (not answered yet)".to_owned(), dim),
            };
            for l in wrap(&answer, w.saturating_sub(4).max(1))
                .into_iter()
                .take(3)
            {
                lines.push(Line::styled(format!("    {l}"), style));
            }
        }
        let n = self.questions.len();
        lines.push(Line::styled(
            cut_to_width("Ready to submit your answers?", w).to_owned(),
            dim,
        ));
        for (i, label) in [(n, "Submit answers"), (n + 1, "Cancel")] {
            let here = row == i;
            let marker = if here { "❯" } else { " " };
            lines.push(Line::styled(
                cut_to_width(&format!("{marker} {}. {label}", i - n + 1), w).to_owned(),
                if here { accent } else { Style::default() },
            ));
        }
        let hint = if row < n {
            "enter change this answer · ↑↓ move · ← back · esc cancel"
        } else {
            "enter choose · ↑↓ move · ← back · esc cancel"
        };
        lines.push(Line::styled(cut_to_width(hint, w).to_owned(), dim));
        lines
    }
}

fn cut(line: Line<'static>, w: usize) -> Line<'static> {
    let mut left = w;
    let spans = line
        .spans
        .into_iter()
        .filter_map(|s| {
            if left == 0 {
                return None;
            }
            let t = cut_to_width(&s.content, left).to_owned();
            left -= unicode_width::UnicodeWidthStr::width(t.as_str());
            Some(Span::styled(t, s.style))
        })
        .collect::<Vec<_>>();
    Line::from(spans)
}

#[cfg(test)]
#[path = "ask_dialog_tests.rs"]
mod tests;
