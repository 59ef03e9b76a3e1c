//! Plain mode: strata on a terminal that can neither move its cursor nor show colour
//! (`TERM=dumb`: Emacs' shell buffer, some consoles and serial lines), where the inline
//! view's redraws would print as garbage.
//!
//! The same [`App`] runs — the same engine, commands, dialogs and selections — but
//! nothing is redrawn: finished history is printed as plain lines once, a running turn
//! is one `… working` line, and whatever waits for an answer in the prompt's place (the
//! permission dialog, a question, a picker, the tasks panel) is printed once as text
//! and answered by typing a line: a choice's number, or text to filter a list, then
//! Enter (an empty line answers nothing: the question is printed again). The prompt is
//! `> `, its placeholder printed once as a line above it whenever it changes (the demo's
//! "how to go live"), and the terminal reads it a line at a time (cooked mode: the
//! terminal edits the line, a trailing `\` continues it on the next line). Ctrl-C
//! interrupts a running turn, and at the prompt ends strata, as Ctrl-D on an empty line
//! does; the session stays on disk, to resume with `strata -c`.

use std::io::{self, Write};
use std::time::Instant;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use futures::{Stream, StreamExt as _};
use ratatui::text::Line;
use tokio::sync::mpsc;

use crate::app::{App, Request};
use crate::bridge::UiEvent;

/// Why [`plain_loop`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainEnd {
    /// The user is done (`/exit`, end of input) or the app asked to stop.
    Exit,
    /// The app wants the binary to act and then start a new loop: a session switch
    /// (`/resume`, `/clear`), read with [`App::take_switch`].
    Switch,
}

/// Runs plain mode until the user leaves or the app asks for a session switch. `lines`
/// are the terminal's input lines (without their line ends); `out` is the terminal.
pub async fn plain_loop<W: Write, L: Stream<Item = io::Result<String>> + Unpin>(
    app: &mut App,
    out: &mut W,
    lines: &mut L,
    ui: &mut mpsc::UnboundedReceiver<UiEvent>,
    width: u16,
) -> io::Result<PlainEnd> {
    let engine = app.engine().clone();
    let store = engine.store().clone();
    let mut seen = store.version();
    // What was committed between the app's creation and now (a start-up notice, a
    // status, messages) is taken in before the first wait: `changed(seen)` only reports
    // commits after `seen`.
    app.on_store_change();
    let mut screen = PlainScreen::default();
    // Cooked mode turns Ctrl-C into SIGINT: it interrupts a running turn (as Esc does in
    // the full UI) and, at the prompt, ends strata.
    let mut interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let end = loop {
        screen.show(app, out, width)?;
        if app.exiting() {
            break PlainEnd::Exit;
        }
        tokio::select! {
            biased;
            line = lines.next() => match line {
                Some(Ok(line)) => {
                    screen.answered();
                    match feed(app, &line) {
                        Request::Exit => break PlainEnd::Exit,
                        Request::Switch => break PlainEnd::Switch,
                        Request::Editor(_) => app.notify(
                            "The editor needs a terminal that can show it; type the prompt here.",
                        ),
                        Request::Transcript => app.notify(
                            "The whole conversation is above: plain mode prints every line once.",
                        ),
                        Request::Viewer | Request::ClearScreen | Request::Suspend
                        | Request::None => {}
                    }
                }
                Some(Err(e)) => return Err(e),
                // End of input (Ctrl-D on an empty line).
                None => break PlainEnd::Exit,
            },
            Some(()) = interrupts.recv() => {
                if !app.turn_running() {
                    break PlainEnd::Exit;
                }
                screen.answered();
                app.on_terminal_event(Event::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
            },
            Some(event) = ui.recv() => {
                app.on_ui_event(event);
                app.drop_abandoned_dialog();
            },
            version = store.changed(seen) => {
                seen = version;
                app.on_store_change();
            },
            prompt = engine.next_notification_prompt(), if app.idle_for_notifications() => {
                app.start_notification_turn(prompt);
            },
        }
    };
    // What is pending still reaches the terminal.
    app.on_store_change();
    screen.print(out, &app.take_commit())?;
    out.flush()?;
    Ok(end)
}

/// What plain mode has printed, so each thing is printed once.
#[derive(Debug, Default)]
struct PlainScreen {
    /// The question printed last (its lines as text), while it is open.
    question: Option<Vec<String>>,
    /// A `> ` or `? ` waits at the end of the last line for the user's line.
    prompted: bool,
    /// The running turn's `… working` line is out.
    working: bool,
    /// The prompt's placeholder printed last (a hint, such as how to go live after the
    /// demo): printed once as a line above the next `> ` when it changes.
    hint: String,
}

impl PlainScreen {
    /// The user typed a line: the terminal is at the start of a new one, and an open
    /// question is printed again if it is still open (an empty line answers nothing).
    fn answered(&mut self) {
        self.prompted = false;
        self.question = None;
    }

    /// Prints what is new: committed history, the working line, a question, the prompt.
    fn show<W: Write>(&mut self, app: &mut App, out: &mut W, width: u16) -> io::Result<()> {
        let commit = app.take_commit();
        if !commit.is_empty() {
            self.print(out, &commit)?;
        }
        let question = app.question_lines(width, Instant::now()).map(|lines| {
            lines
                .iter()
                .map(|l| l.to_string().trim_end().to_owned())
                .collect::<Vec<_>>()
        });
        match question {
            Some(text) => {
                if self.question.as_ref() != Some(&text) {
                    self.break_line(out)?;
                    for line in &text {
                        writeln!(out, "{line}")?;
                    }
                    write!(out, "? ")?;
                    self.prompted = true;
                    self.question = Some(text);
                }
            }
            None => {
                self.question = None;
                if app.turn_running() {
                    if !self.working {
                        self.break_line(out)?;
                        writeln!(out, "… working")?;
                        self.working = true;
                    }
                } else {
                    self.working = false;
                    if !self.prompted {
                        if app.placeholder() != self.hint {
                            self.hint = app.placeholder().to_owned();
                            writeln!(out, "{}", self.hint)?;
                        }
                        write!(out, "> ")?;
                        self.prompted = true;
                    }
                }
            }
        }
        out.flush()
    }

    /// Prints history lines as plain text.
    fn print<W: Write>(&mut self, out: &mut W, lines: &[Line<'static>]) -> io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        self.break_line(out)?;
        for line in lines {
            writeln!(out, "{}", line.to_string().trim_end())?;
        }
        Ok(())
    }

    /// Ends a `> ` left waiting, so output starts on a line of its own.
    fn break_line<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        if self.prompted {
            writeln!(out)?;
            self.prompted = false;
        }
        Ok(())
    }
}

/// Hands a typed line to the app: into the prompt (as a paste, so a long line is kept
/// whole) when the prompt is open, else as keys to what waits in its place (a digit
/// picks a dialog's choice, text filters a list); then Enter.
fn feed(app: &mut App, line: &str) -> Request {
    let key = |code| Event::Key(KeyEvent::new(code, KeyModifiers::NONE));
    if !app.question_open() {
        if !line.is_empty() {
            app.on_terminal_event(Event::Paste(line.to_owned()));
        }
    } else if line.trim().is_empty() {
        // Never an answer: a line typed before the question was printed (Enter pressed
        // while a turn ran) must not approve what it did not see. Ask again.
        return Request::None;
    } else {
        for c in line.chars() {
            match app.on_terminal_event(key(KeyCode::Char(c))) {
                Request::None => {}
                other => return other,
            }
            // A digit may have answered a dialog: the rest goes to the prompt.
            if !app.question_open() {
                return Request::None;
            }
        }
    }
    app.on_terminal_event(key(KeyCode::Enter))
}
