//! `strata` without `-p`: the interactive terminal UI (`strata_tui`) on the same engine
//! headless mode uses.
//!
//! Both stdin and stdout must be terminals; otherwise the run stops with a message
//! pointing to `-p` (exit code 2), since a UI drawn into a pipe helps nobody. The engine
//! is opened with the UI's ports: permission prompts become dialogs, and the provider is
//! wrapped so streamed text reaches the live cell. `--replay demo` plays the demo
//! session built into the binary, then leaves the prompt open saying how to talk to a
//! live model. With `TERM=dumb` the UI runs in plain mode (`strata_tui::plain`): lines
//! in, plain lines out, nothing redrawn.

use std::io::IsTerminal as _;
use std::sync::Arc;

use strata_agent::engine::{Engine, EngineHandles, EngineOptions, ResumeTarget};
use strata_agent::permissions::{LaunchFlags, PermissionLaunch};
use strata_config::paths;
use strata_tui::app::{App, Switch};
use strata_tui::bridge::{StreamingProvider, UiEvents, UiPrompter};
use strata_tui::input::Submitted;
use strata_tui::run::{self, Backend};
use strata_tui::term::InlineTerminal;

use crate::args::AgentArgs;
use crate::exit::Failure;
use crate::headless::{demo, provider};

/// What to tell someone whose stdin or stdout is not a terminal.
pub(crate) const NOT_A_TERMINAL: &str = "\
strata's interactive UI needs a terminal on stdin and stdout. For scripts, pipes and CI run headless:
  strata -p \"<prompt>\"                 (the answer on stdout)
  echo \"<prompt>\" | strata -p          (the prompt from stdin)
See strata --help for every flag.";

/// What the prompt says once the demo is over.
const DEMO_LIVE_HINT: &str = "Demo over. For a live model: set ANTHROPIC_API_KEY (or \
     OPENAI_API_KEY / OPENAI_BASE_URL) and run strata";

/// The prompt the demo transcript answers (its first user message).
const DEMO_PROMPT: &str = "Give me a quick tour of this project.";

/// Runs the interactive UI.
pub(crate) fn run(args: AgentArgs) -> anyhow::Result<()> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(Failure::usage(NOT_A_TERMINAL).into());
    }
    if args.resume.is_some() && args.continue_session {
        return Err(Failure::usage(
            "--resume and --continue cannot be combined: --resume <id> picks a session, \
             --continue the newest one",
        )
        .into());
    }
    let env = |name: &str| std::env::var(name).ok();
    let config_dir = paths::config_dir().map_err(|e| Failure::usage(e.to_string()))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::failed(format!("cannot read the current directory: {e}")))?;
    if let Some(flag) = &args.settings {
        crate::headless::check_settings_flag(flag, &config_dir, &cwd)?;
    }
    // `--remote` or the settings' `remote` block (a bad block stops here, before the UI).
    let remote = crate::remote::options(
        &config_dir,
        &cwd,
        args.settings.as_deref(),
        args.remote.as_deref(),
    )?;
    let key_helper = provider::key_helper(
        args.provider,
        args.replay.as_deref(),
        &env,
        &config_dir,
        &cwd,
        args.settings.as_deref(),
    );
    let inner = provider::choose(
        args.provider,
        args.replay.as_deref(),
        &env,
        key_helper.clone(),
    )?;
    let demo = args.replay.as_deref() == Some(provider::DEMO);
    let mut allowed_tools = args.allowed_tools;
    if demo {
        allowed_tools.extend(demo::ALLOWED_TOOLS.map(String::from));
    }
    // `strata -r` without an id opens the session picker on a new session.
    let picker_first = args.resume.as_deref().is_some_and(|r| r.trim().is_empty());
    let resume = match (
        args.resume.filter(|r| !r.trim().is_empty()),
        args.continue_session,
    ) {
        (Some(id), _) => Some(ResumeTarget::Session(id)),
        (None, true) => Some(ResumeTarget::Continue),
        (None, false) => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
    // The system prompt and thinking flags work here as in headless mode; what strata
    // does not honour is said before the UI starts (it stays above it in the scrollback).
    let sdk = crate::headless::sdk_flags::read(args.sdk)?;
    for flag in &sdk.unsupported {
        crate::headless::warn(format_args!("{flag} (not honoured)"));
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let base = EngineOptions {
        cwd: cwd.clone(),
        config_dir: config_dir.clone(),
        handles: EngineHandles::process(),
        provider: Arc::new(StreamingProvider::new(inner, tx.clone())),
        model: args.model,
        permission: PermissionLaunch {
            flags: LaunchFlags {
                dangerously_skip_permissions: args.dangerously_skip_permissions,
                allow_dangerously_skip_permissions: args.allow_dangerously_skip_permissions,
            },
            mode: args.permission_mode.map(Into::into),
            allowed_tools,
            disallowed_tools: args.disallowed_tools,
            add_dirs: args.add_dirs,
        },
        settings_flag: args.settings,
        resume: None,
        fork_session: false,
        max_turns: args.max_turns,
        interactive: true,
        verbose: args.verbose,
        prompter: Some(Arc::new(UiPrompter::new(tx.clone()))),
        events: Arc::new(UiEvents::new(tx.clone())),
        system_prompt: sdk.system_prompt,
        append_system_prompt: sdk.append_system_prompt,
        mcp_config: args.mcp_config,
        strict_mcp_config: args.strict_mcp_config,
        max_thinking_tokens: sdk.max_thinking_tokens,
        sdk: Default::default(),
    };
    let fork_session = args.fork_session;
    let outcome = runtime.block_on(async move {
        // The connection is made in the background: the UI starts at once and the footer
        // says where it stands.
        let link = match &remote {
            Some(options) => Some(crate::remote::Link::start(options).await?),
            None => None,
        };
        if let (Some(link), Some(ResumeTarget::Session(id))) = (&link, &resume)
            && uuid::Uuid::parse_str(id).is_ok()
            && let Some(message) = link.rebuild(&config_dir, &cwd, id).await?
        {
            crate::headless::warn(format_args!("{message}"));
        }
        let mut target = resume;
        let mut first = true;
        let mut notice: Option<String> = None;
        let mut term: Option<InlineTerminal<std::io::Stdout>> = None;
        // A terminal that cannot move its cursor gets plain mode (strata_tui::plain); its
        // input lines are read once for every session the UI opens.
        let mut plain_lines = plain_terminal().then(stdin_lines);
        let history_file = strata_session::history::History::new(&config_dir);
        let project = paths::project_root(&cwd).to_string_lossy().into_owned();
        // One engine per session: `/resume` and `/clear` close it and open the next in
        // the same terminal; the scrollback keeps what was shown.
        loop {
            let mut options = base.clone();
            options.resume = target.take();
            options.fork_session = first && fork_session;
            // A session picked with `/resume` is brought level with the remote as `-r`
            // does at start-up: it may have gone on on another machine.
            if !first
                && let (Some(link), Some(ResumeTarget::Session(id))) = (&link, &options.resume)
                && uuid::Uuid::parse_str(id).is_ok()
            {
                notice = match link.rebuild(&config_dir, &cwd, id).await {
                    Ok(message) => message.map(|m| format!("⚠ {m}")),
                    Err(failure) => Some(format!("⚠ {}", failure.message)),
                };
            }
            let mut remote_session = link.as_ref().map(crate::remote::Link::session);
            options.sdk.transcript_mirror = remote_session
                .as_ref()
                .map(crate::remote::SessionLink::mirror);
            let switching = options.resume.is_some() && !first;
            let engine = match Engine::open(options).await {
                Ok(engine) => Arc::new(engine),
                // A session picked in the UI that cannot be opened: say so in a new one.
                Err(e) if switching => {
                    notice = Some(format!("⚠ the session could not be resumed: {e}"));
                    let mut options = base.clone();
                    options.resume = None;
                    remote_session = link.as_ref().map(crate::remote::Link::session);
                    options.sdk.transcript_mirror = remote_session
                        .as_ref()
                        .map(crate::remote::SessionLink::mirror);
                    Arc::new(Engine::open(options).await.map_err(Failure::from)?)
                }
                Err(e) => return Err(Failure::from(e)),
            };
            let _key_helper = key_helper.as_ref().map(|h| {
                h.redact_with(engine.secrets().clone());
                h.attach(engine.store())
            });
            if let Some(remote) = &mut remote_session {
                remote.attach(&engine, &config_dir).await;
                // The footer shows the status from the app state; nothing else to tell.
                remote.follow(&engine, Arc::new(|_: &strata_remote::ConnectionState| {}));
            }
            let (width, height) = crossterm::terminal::size().unwrap_or((80, 24));
            let mut app = App::new(
                engine.clone(),
                tx.clone(),
                Vec::new(),
                Some(history_file.clone()),
                project.clone(),
                width,
            );
            app.set_history(recent_prompts(&history_file, &project));
            app.set_config_dir(config_dir.clone());
            if let Some(n) = notice.take() {
                app.notify(&n);
            }
            if first {
                for w in engine.warnings() {
                    app.notify(&format!("⚠ {w}"));
                }
            } else {
                app.notify(&format!("Session {}", engine.session_id()));
            }
            app.commit_existing();
            if first && demo {
                app.notify(
                    "strata demo: a recorded session plays back (no model is called); its tool \
                     calls run for real, here, with the usual permission checks.",
                );
                app.set_placeholder(DEMO_LIVE_HINT);
                app.start_turn(Submitted {
                    display: DEMO_PROMPT.to_owned(),
                    text: DEMO_PROMPT.to_owned(),
                    pastes: Vec::new(),
                });
            }
            if first && picker_first {
                let _ = app.open_resume("");
            }
            // Project `.mcp.json` servers nobody answered for yet (issue 15).
            app.ask_mcp_approvals();
            app.start_status_line();
            match plain_lines.as_mut() {
                Some(lines) => plain_session(&mut app, lines, &mut rx).await?,
                None => tty_session(&mut app, &mut term, &mut rx, (width, height)).await?,
            }
            let switch = app.take_switch();
            drop(app);
            close(engine).await?;
            if let Some(remote) = remote_session {
                remote.finish().await;
            }
            first = false;
            match switch {
                Some(Switch::Resume(id)) => target = Some(ResumeTarget::Session(id)),
                Some(Switch::New) => target = None,
                None => break,
            }
        }
        run::restore_terminal();
        Ok(())
    });
    runtime.shutdown_background();
    outcome.map_err(Into::into)
}

/// Closes a session the UI is done with: a turn still running is interrupted and given
/// a moment to record its end.
async fn close(engine: Arc<Engine>) -> Result<(), Failure> {
    engine.interrupt();
    for _ in 0..50 {
        if Arc::strong_count(&engine) == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let _conversation = std::mem::ManuallyDrop::new(engine.store().get().messages.clone());
    match Arc::try_unwrap(engine) {
        Ok(engine) => {
            engine.close().await.map_err(Failure::from)?;
            Ok(())
        }
        Err(_) => Err(Failure::failed(
            "could not close the session cleanly: a turn was still running",
        )),
    }
}

/// One session's UI on the real terminal: raw mode and the inline view (set up on the
/// first session, kept for the next), the event loop, and `$EDITOR` when the loop stops
/// for it. A failing terminal restores it before the error is reported.
async fn tty_session(
    app: &mut App,
    term: &mut Option<InlineTerminal<std::io::Stdout>>,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<strata_tui::bridge::UiEvent>,
    (width, height): (u16, u16),
) -> Result<(), Failure> {
    let term = match term {
        Some(t) => t,
        None => {
            run::install_panic_hook();
            run::enter_terminal()
                .map_err(|e| Failure::failed(format!("cannot set up the terminal: {e}")))?;
            let term = term.insert(InlineTerminal::new(
                std::io::stdout(),
                width,
                height,
                color_wanted(),
            ));
            // Where the cursor is (the terminal answers a query; a terminal that
            // does not is taken to be at its top).
            let row = crossterm::cursor::position().map_or(0, |(_, y)| y);
            term.make_room(row)
                .map_err(|e| Failure::failed(format!("the terminal failed: {e}")))?;
            term
        }
    };
    let looped = loop {
        let events = run::terminal_events();
        let looped = run::event_loop(app, term, events, rx, Backend::Tty).await;
        // The loop stopped for the editor: run it with the terminal's input free,
        // then go on where it was.
        if looped.is_ok()
            && let Some(job) = app.take_editor_job()
        {
            let result = run::run_editor(&job.path, Backend::Tty).await;
            term.reset_origin();
            app.editor_done(&job, result);
            continue;
        }
        break looped;
    };
    if let Err(e) = looped {
        run::restore_terminal();
        return Err(Failure::failed(format!("the terminal failed: {e}")));
    }
    Ok(())
}

/// One session's UI in plain mode (`TERM=dumb`): lines in, plain lines out.
async fn plain_session(
    app: &mut App,
    lines: &mut StdinLines,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<strata_tui::bridge::UiEvent>,
) -> Result<(), Failure> {
    let width = crossterm::terminal::size().map_or(80, |(w, _)| w);
    let mut out = std::io::stdout();
    strata_tui::plain::plain_loop(app, &mut out, lines, rx, width)
        .await
        .map_err(|e| Failure::failed(format!("the terminal failed: {e}")))?;
    Ok(())
}

/// Whether the terminal can only print lines (`TERM=dumb`: no cursor movement).
fn plain_terminal() -> bool {
    std::env::var("TERM").is_ok_and(|t| t == "dumb")
}

/// The terminal's input, a line at a time (plain mode).
type StdinLines = std::pin::Pin<Box<dyn futures::Stream<Item = std::io::Result<String>> + Send>>;

/// Reads stdin as lines without their line ends.
fn stdin_lines() -> StdinLines {
    use tokio::io::AsyncBufReadExt as _;
    let lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    Box::pin(futures::stream::unfold(lines, |mut lines| async move {
        match lines.next_line().await {
            Ok(Some(line)) => Some((Ok(line), lines)),
            Ok(None) => None,
            Err(e) => Some((Err(e), lines)),
        }
    }))
}

/// Colour unless `NO_COLOR` is set or `TERM` is `dumb`.
fn color_wanted() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    !no_color && !dumb
}

/// How many earlier prompts Up/Down and Ctrl-R offer.
const HISTORY_LIMIT: usize = 200;

/// The project's earlier prompts, newest first, each with the text of the pastes behind
/// its chips (inline in `history.jsonl` or in the paste cache), so a recalled prompt
/// sends what was pasted. A history that cannot be read is no history: the UI works
/// without it, and the reason is logged.
fn recent_prompts(
    history: &strata_session::history::History,
    project: &str,
) -> Vec<strata_tui::input::HistoryItem> {
    let entries = match history.recent(project, HISTORY_LIMIT) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!("the input history could not be read: {e}");
            return Vec::new();
        }
    };
    entries
        .into_iter()
        .map(|entry| {
            let pastes = entry
                .pasted_contents
                .values()
                .filter(|p| p.kind == "text")
                .filter_map(|p| match history.paste_text(p) {
                    Ok(text) => text.map(|text| strata_session::history::Paste { id: p.id, text }),
                    Err(e) => {
                        tracing::warn!("a paste of the input history could not be read: {e}");
                        None
                    }
                })
                .collect();
            strata_tui::input::HistoryItem {
                display: entry.display,
                pastes,
            }
        })
        .collect()
}
