//! The event loop: terminal input, store changes, engine events, news of background
//! work that ended while idle (a turn of its own) and — only while a turn runs — a frame
//! clock, merged in one `select!`. A change marks the app dirty; a frame
//! is drawn at most every 16 ms (a burst of deltas becomes one frame), or 4 ms after the
//! last one when it answers a key, so typing is echoed at once even while an answer
//! streams; and while idle nothing wakes the loop: no timer exists unless something is
//! live.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream};
use crossterm::{QueueableCommand as _, cursor, event, terminal};
use futures::{Stream, StreamExt as _};
use tokio::sync::mpsc;

use crate::app::{App, Request};
use crate::bridge::UiEvent;
use crate::term::InlineTerminal;

/// The shortest time between two frames drawn for store changes and streamed text.
pub const FRAME_INTERVAL: Duration = Duration::from_millis(16);
/// The shortest time between two frames when a key or paste changed what is shown: a
/// typed character is echoed within this, not after the streaming pace's 16 ms, and a
/// burst of keys still becomes one frame (the loop reads every ready event first).
pub const INPUT_FRAME_INTERVAL: Duration = Duration::from_millis(4);
/// The spinner's clock while a turn runs.
const SPINNER_INTERVAL: Duration = Duration::from_millis(120);

/// Counters of one run, for tests and `strata-bench tui`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LoopStats {
    /// Frames drawn.
    pub frames: u64,
}

/// Whether the loop owns a real terminal (raw mode, alternate screen, suspend) or only
/// writes to a stream (tests, the benchmark's vt100 backend).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The process's terminal.
    Tty,
    /// Any writer; terminal modes are left alone.
    Headless,
}

/// Runs the loop until the app exits or the terminal input ends.
pub async fn event_loop<W: Write, S: Stream<Item = io::Result<Event>> + Unpin>(
    app: &mut App,
    term: &mut InlineTerminal<W>,
    mut input: S,
    ui: &mut mpsc::UnboundedReceiver<UiEvent>,
    backend: Backend,
) -> io::Result<LoopStats> {
    let engine = app.engine().clone();
    let store = engine.store().clone();
    let mut seen = store.version();
    // What was committed between the app's creation and now (a start-up notice, a
    // status, messages) is taken in before the first wait: `changed(seen)` only reports
    // commits after `seen`.
    app.on_store_change();
    let mut last_frame = Instant::now() - FRAME_INTERVAL;
    let mut input_open = true;
    // The next frame answers a key (see INPUT_FRAME_INTERVAL).
    let mut answers_input = false;
    loop {
        let now = Instant::now();
        let due = if app.is_dirty() {
            let interval = if answers_input {
                INPUT_FRAME_INTERVAL
            } else {
                FRAME_INTERVAL
            };
            Some((last_frame + interval).max(now))
        } else if app.animating() {
            Some(last_frame + SPINNER_INTERVAL)
        } else {
            None
        };
        tokio::select! {
            biased;
            ev = input.next(), if input_open => match ev {
                Some(Ok(ev)) => {
                    if let Event::Resize(w, h) = ev {
                        term.resize(w, h);
                    }
                    let request = app.on_terminal_event(ev);
                    answers_input |= app.is_dirty();
                    match request {
                        Request::None => {}
                        Request::Exit => break,
                        Request::ClearScreen => {
                            term.clear_screen()?;
                            app.mark_dirty();
                        }
                        Request::Transcript => transcript(app, term, &mut input, backend).await?,
                        Request::Suspend => suspend(app, term, backend)?,
                        // The binary takes over: it switches sessions, or runs the
                        // editor with the terminal's input free (this loop's input
                        // stream would read the editor's keys) and starts a new loop.
                        Request::Switch => break,
                        Request::Editor(job) => {
                            app.set_editor_job(job);
                            break;
                        }
                        Request::Viewer => viewer(app, term, &mut input).await?,
                    }
                }
                Some(Err(e)) => return Err(e),
                None => {
                    input_open = false;
                    if backend == Backend::Tty {
                        break;
                    }
                }
            },
            Some(event) = ui.recv() => {
                app.on_ui_event(event);
                app.drop_abandoned_dialog();
            },
            version = store.changed(seen) => {
                seen = version;
                app.on_store_change();
            },
            // A background task ended while idle: a turn tells the model (the news of
            // one that ends during a turn goes with that turn's next request).
            prompt = engine.next_notification_prompt(), if app.idle_for_notifications() => {
                app.start_notification_turn(prompt);
            },
            () = sleep_until(due), if due.is_some() => {
                // The terminal may have been resized (and reflowed what it shows) before
                // its resize event is read: a frame laid out for the old width would
                // start on the wrong row and leave part of the live area behind in the
                // scrollback. Asking for the size is one ioctl.
                if backend == Backend::Tty
                    && let Ok((w, h)) = terminal::size()
                    && (w, h) != (term.width(), term.height())
                {
                    term.resize(w, h);
                    app.resize(w);
                }
                let now = Instant::now();
                let frame = app.frame(now);
                let commit = app.take_commit();
                term.draw(&commit, &frame)?;
                answers_input = false;
                if app.take_bell() {
                    // The terminal's bell: a prompt waits, or a long turn ended.
                    term.writer_mut().write_all(b"\x07")?;
                    term.writer_mut().flush()?;
                }
                last_frame = now;
            },
        }
        if app.exiting() {
            break;
        }
    }
    // What is pending still reaches the scrollback; then the live area goes.
    app.on_store_change();
    let commit = app.take_commit();
    if !commit.is_empty() {
        term.clear_live()?;
        term.print_plain(&commit)?;
    } else {
        term.clear_live()?;
    }
    Ok(LoopStats {
        frames: term.frames(),
    })
}

async fn sleep_until(due: Option<Instant>) {
    if let Some(due) = due {
        tokio::time::sleep_until(due.into()).await;
    }
}

/// Why `$EDITOR` did not give the prompt back ([`run_editor`]).
#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    /// The editor could not be started.
    #[error("the editor `{editor}` could not start: {source}")]
    Start {
        /// The command line tried.
        editor: String,
        /// Why.
        source: io::Error,
    },
    /// It ran and exited with a failure.
    #[error("the editor `{editor}` exited with {status}")]
    Failed {
        /// The command line.
        editor: String,
        /// How it exited.
        status: std::process::ExitStatus,
    },
    /// The terminal could not be taken back from it.
    #[error("the terminal could not be set up again after the editor: {0}")]
    Terminal(io::Error),
    /// The thread that waited for it failed.
    #[error("waiting for the editor failed: {0}")]
    Wait(String),
}

/// Runs `$VISUAL`, else `$EDITOR`, else `vi` on `path` with the terminal handed over
/// (raw mode off for a real terminal).
pub async fn run_editor(path: &std::path::Path, backend: Backend) -> Result<(), EditorError> {
    if backend == Backend::Tty {
        restore_terminal();
    }
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_owned());
    let path = path.to_path_buf();
    // The editor's command may carry arguments (`code --wait`): the shell splits it.
    let command = editor.clone();
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{command} \"$1\""))
            .arg("sh")
            .arg(&path)
            .status()
    })
    .await;
    if backend == Backend::Tty {
        enter_terminal().map_err(EditorError::Terminal)?;
    }
    match status {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(EditorError::Failed { editor, status }),
        Ok(Err(source)) => Err(EditorError::Start { editor, source }),
        Err(e) => Err(EditorError::Wait(e.to_string())),
    }
}

/// Ctrl-O: the whole conversation in the alternate screen, with its colours, newest at
/// the bottom: ↑↓, PgUp/PgDn, Home/End scroll (a collapsed tool result is shown whole
/// here), `v` toggles verbose (persisted by FX-4), and any other key returns to the
/// inline view as it was.
async fn transcript<W: Write, S: Stream<Item = io::Result<Event>> + Unpin>(
    app: &mut App,
    term: &mut InlineTerminal<W>,
    input: &mut S,
    _backend: Backend,
) -> io::Result<()> {
    use event::KeyCode;
    term.writer_mut().queue(terminal::EnterAlternateScreen)?;
    // Rows scrolled up from the end.
    let mut back: usize = 0;
    // The conversation is rendered once per width (the view is always verbose), not
    // again for every key that scrolls it: a long session has many lines.
    let mut rendered: Option<(u16, Vec<ratatui::text::Line<'static>>)> = None;
    let result = loop {
        let width = term.width();
        let lines = match &rendered {
            Some((w, lines)) if *w == width => lines,
            _ => &rendered.insert((width, app.transcript(width))).1,
        };
        let verbose = app.engine().store().with(|s| s.verbose);
        let hint = format!(
            "transcript · ↑↓ pgup pgdn home end · v verbose {} · other keys: back ──",
            if verbose { "on" } else { "off" }
        );
        let rows = draw_page(term, None, lines, &mut back, &hint)?;
        match input.next().await {
            Some(Ok(Event::Key(k))) if k.kind == event::KeyEventKind::Release => {}
            Some(Ok(Event::Key(k))) if scroll(k.code, rows, &mut back) => {}
            Some(Ok(Event::Key(k))) => match k.code {
                KeyCode::Char('v') => app.toggle_verbose(),
                _ => break Ok(()),
            },
            Some(Ok(Event::Resize(w, h))) => {
                term.resize(w, h);
                app.resize(w);
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => break Err(e),
            None => break Ok(()),
        }
    };
    term.writer_mut().queue(terminal::LeaveAlternateScreen)?;
    app.mark_dirty();
    result
}

/// A pager's scrolling keys: ↑↓ a row, PgUp/PgDn a page of `rows`, Home/End the start
/// and the end (`back` counts rows up from the end; [`draw_page`] clamps it). Returns
/// false for any other key.
fn scroll(code: event::KeyCode, rows: usize, back: &mut usize) -> bool {
    use event::KeyCode;
    match code {
        KeyCode::Up => *back = back.saturating_add(1),
        KeyCode::Down => *back = back.saturating_sub(1),
        KeyCode::PageUp => *back = back.saturating_add(rows),
        KeyCode::PageDown => *back = back.saturating_sub(rows),
        KeyCode::Home => *back = usize::MAX,
        KeyCode::End => *back = 0,
        _ => return false,
    }
    true
}

/// Draws one page of a pager in the alternate screen: `title` on the first row if
/// given, `lines` (with their styles) scrolled `back` rows up from the end (clamped to
/// what there is), and the position followed by `hint` on the last row. Returns how many rows
/// of lines fit, for PgUp/PgDn.
fn draw_page<W: Write>(
    term: &mut InlineTerminal<W>,
    title: Option<&str>,
    lines: &[ratatui::text::Line<'static>],
    back: &mut usize,
    hint: &str,
) -> io::Result<usize> {
    let (w, h) = (term.width(), term.height());
    let chrome = 1 + usize::from(title.is_some());
    let rows = usize::from(h).saturating_sub(chrome).max(1);
    *back = (*back).min(lines.len().saturating_sub(rows));
    let end = lines.len() - *back;
    let start = end.saturating_sub(rows);
    let out = term.writer_mut();
    out.queue(terminal::BeginSynchronizedUpdate)?;
    out.queue(terminal::Clear(terminal::ClearType::All))?;
    out.queue(cursor::MoveTo(0, 0))?;
    if let Some(title) = title {
        write!(
            out,
            "{}\r\n",
            crate::text::cut_to_width(title, usize::from(w))
        )?;
    }
    for line in &lines[start..end] {
        term.write_styled_line(line)?;
        term.writer_mut().write_all(b"\r\n")?;
    }
    let position = if lines.is_empty() {
        "empty".to_owned()
    } else {
        format!("{}-{} of {}", start + 1, end, lines.len())
    };
    // The position first: a narrow terminal cuts the hint, not where the page is.
    let footer = format!("── {position} · {hint}");
    let out = term.writer_mut();
    write!(
        out,
        "{}",
        crate::text::cut_to_width(&footer, usize::from(w))
    )?;
    out.queue(terminal::EndSynchronizedUpdate)?;
    out.flush()?;
    Ok(rows)
}

/// How often the viewer reads a running shell's output file again (a file has no
/// selection to wait on; an agent's conversation has).
const VIEWER_REFRESH: Duration = Duration::from_secs(1);

/// A background agent's conversation or a shell's output in the alternate screen
/// ([`App::viewer_lines`]), newest at the bottom: ↑↓, PgUp/PgDn, Home/End scroll, `r`
/// reads an agent's transcript again, Esc, `q` or ← go back to the inline view (the agent is
/// released: [`App::viewer_closed`]). A running agent's view follows it live: each
/// store commit that changed the viewed agent's conversation or status
/// ([`App::viewer_changed`]) is one redraw, and nothing else wakes it.
async fn viewer<W: Write, S: Stream<Item = io::Result<Event>> + Unpin>(
    app: &mut App,
    term: &mut InlineTerminal<W>,
    input: &mut S,
) -> io::Result<()> {
    use event::KeyCode;
    term.writer_mut().queue(terminal::EnterAlternateScreen)?;
    let store = app.engine().store().clone();
    let mut seen = store.version();
    // Rows scrolled up from the end.
    let mut back: usize = 0;
    let mut rows = draw_viewer(app, term, &mut back)?;
    let result = loop {
        let next = tokio::select! {
            ev = input.next() => ev,
            version = store.changed(seen) => {
                seen = version;
                if app.viewer_changed() {
                    rows = draw_viewer(app, term, &mut back)?;
                }
                continue;
            }
            () = tokio::time::sleep(VIEWER_REFRESH), if app.viewer_reads_file() => {
                rows = draw_viewer(app, term, &mut back)?;
                continue;
            }
        };
        match next {
            Some(Ok(Event::Key(k))) if k.kind == event::KeyEventKind::Release => continue,
            Some(Ok(Event::Key(k))) if scroll(k.code, rows, &mut back) => {}
            Some(Ok(Event::Key(k))) => match k.code {
                KeyCode::Char('r') => app.viewer_reload(),
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Left => break Ok(()),
                KeyCode::Char('c' | 'd') if k.modifiers.contains(event::KeyModifiers::CONTROL) => {
                    break Ok(());
                }
                _ => continue,
            },
            Some(Ok(Event::Resize(w, h))) => {
                term.resize(w, h);
                app.resize(w);
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => break Err(e),
            None => break Ok(()),
        }
        rows = draw_viewer(app, term, &mut back)?;
    };
    term.writer_mut().queue(terminal::LeaveAlternateScreen)?;
    app.viewer_closed();
    result
}

/// Draws the viewer scrolled `back` rows up from the end (clamped to what there is);
/// returns how many rows of lines fit.
fn draw_viewer<W: Write>(
    app: &mut App,
    term: &mut InlineTerminal<W>,
    back: &mut usize,
) -> io::Result<usize> {
    let (title, lines) = app.viewer_lines(term.width());
    draw_page(
        term,
        Some(&title),
        &lines,
        back,
        "↑↓ scroll · r reload · esc back ──",
    )
}

/// Ctrl-Z: the terminal is restored, the process stops (SIGTSTP) and on `fg` the modes
/// come back and the live area is drawn again.
fn suspend<W: Write>(
    app: &mut App,
    term: &mut InlineTerminal<W>,
    backend: Backend,
) -> io::Result<()> {
    if backend != Backend::Tty {
        return Ok(());
    }
    term.clear_live()?;
    restore_terminal();
    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGTSTP);
    enter_terminal()?;
    app.mark_dirty();
    Ok(())
}

/// Raw mode, bracketed paste and disambiguated keys (Shift+Enter) on.
pub fn enter_terminal() -> io::Result<()> {
    terminal::enable_raw_mode()?;
    let mut out = io::stdout();
    out.queue(event::EnableBracketedPaste)?;
    out.queue(event::PushKeyboardEnhancementFlags(
        event::KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES,
    ))?;
    out.flush()
}

/// Everything [`enter_terminal`] turned on, off again, and the cursor shown. Safe to call
/// twice and from a panic hook.
pub fn restore_terminal() {
    let mut out = io::stdout();
    let _ = out.queue(event::PopKeyboardEnhancementFlags);
    let _ = out.queue(event::DisableBracketedPaste);
    let _ = out.queue(terminal::EndSynchronizedUpdate);
    let _ = out.queue(cursor::Show);
    let _ = out.flush();
    let _ = terminal::disable_raw_mode();
}

/// Installs a panic hook that restores the terminal before the message is printed.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        let _ = io::stdout().write_all(b"\r\n");
        previous(info);
    }));
}

/// The terminal's event stream.
pub fn terminal_events() -> EventStream {
    EventStream::new()
}
