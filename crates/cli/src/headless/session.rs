//! One headless session: open the engine, run the prompts, print, close.

use std::collections::VecDeque;
use std::io::Write as _;
use std::sync::Arc;

use strata_agent::engine::{
    Engine, EngineHandles, EngineOptions, EventSink, PermissionPrompter, SdkOptions,
};
use strata_agent::hooks::Hooks;
use strata_protocol::message::Message;
use strata_protocol::sdk::{
    ControlResponse, ResultMessage, SdkMessage, StatusMessage, SystemMessage,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::callbacks::CallbackChannel;
use super::control::Controller;
use super::input::{self, Input};
use super::output::{LineWriter, Lines, QuietSink, StreamSink};
use super::prompter::{Answered, PromptChannel};
use super::states::SessionStates;
use super::{Prompts, Setup, warn};
use crate::args::OutputFormat;
use crate::commands::sessions::cleanup;
use crate::exit::Failure;

/// Runs the session `setup` describes.
pub(crate) async fn run(setup: Setup) -> anyhow::Result<()> {
    let writer = match setup.output {
        OutputFormat::StreamJson => Some(LineWriter::start()?),
        OutputFormat::Text | OutputFormat::Json => None,
    };
    let lines = writer.as_ref().map(LineWriter::lines);
    let events: Arc<dyn EventSink> = match &lines {
        Some(lines) => Arc::new(StreamSink::new(lines.clone())),
        None => Arc::new(QuietSink),
    };
    let prompt_channel = match (&lines, setup.prompts_to_client) {
        (Some(lines), true) => Some(PromptChannel::new(lines.clone())),
        _ => None,
    };
    // cleanupPeriodDays: swept once the session is open (so the one resumed is known).
    let sweep = (
        setup.config_dir.clone(),
        setup.cwd.clone(),
        setup.settings_flag.clone(),
        match &setup.resume {
            Some(strata_agent::engine::ResumeTarget::Session(s)) => Some(cleanup::resumed_id(s)),
            _ => None,
        },
    );
    // `--remote`: the connection starts now, in the background (a server that is away
    // delays nothing); a session this machine does not have is rebuilt from the stream,
    // which waits for the server.
    let link = match &setup.remote {
        Some(options) => Some(crate::remote::Link::start(options).await?),
        None => None,
    };
    if let (Some(link), Some(strata_agent::engine::ResumeTarget::Session(id))) =
        (&link, &setup.resume)
        && uuid::Uuid::parse_str(id).is_ok()
        && let Some(message) = link.rebuild(&setup.config_dir, &setup.cwd, id).await?
    {
        super::warn(format_args!("{message}"));
    }
    let mut remote = link.as_ref().map(crate::remote::Link::session);
    let config_dir_of_session = setup.config_dir.clone();
    let default_model = setup.provider.default_model().map(str::to_owned);
    let provider_name = setup.provider.name();
    let sdk = setup.sdk;
    // Every session has a hook runtime: the settings' hooks join it when the session
    // opens, an SDK client's callbacks at `initialize`.
    let hooks = Arc::new(Hooks::new());
    if sdk.include_hook_events
        && let Some(lines) = &lines
    {
        hooks.set_lifecycle_sink(Some(Arc::new(StreamSink::new(lines.clone()))));
    }
    let options = EngineOptions {
        cwd: setup.cwd,
        config_dir: setup.config_dir,
        // One session per process: the process's bootstrap state and session scope.
        handles: EngineHandles::process(),
        provider: setup.provider,
        model: setup.model,
        permission: setup.permission,
        settings_flag: setup.settings_flag,
        resume: setup.resume,
        fork_session: setup.fork_session,
        max_turns: setup.max_turns,
        interactive: false,
        verbose: setup.verbose,
        prompter: prompt_channel
            .clone()
            .map(|p| p as Arc<dyn PermissionPrompter>),
        events,
        system_prompt: sdk.system_prompt,
        append_system_prompt: sdk.append_system_prompt,
        mcp_config: setup.mcp_config,
        strict_mcp_config: setup.strict_mcp_config,
        max_thinking_tokens: sdk.max_thinking_tokens,
        sdk: SdkOptions {
            include_partial_messages: sdk.include_partial_messages,
            max_budget_usd: sdk.max_budget_usd,
            session_id: sdk.session_id,
            tools: sdk.tools,
            hooks: Some(hooks),
            // As the reference's print mode: a turn's result waits for the background
            // agents it started (their notifications are turns of their own).
            hold_result_for_agents: true,
            agents: sdk.agents,
            structured_output: sdk.structured_output,
            no_session_persistence: sdk.no_session_persistence,
            setting_sources: sdk.setting_sources,
            transcript_mirror: remote.as_ref().map(crate::remote::SessionLink::mirror),
        },
    };
    let unsupported_flags = sdk.unsupported;
    let resumed_session = options.resume.is_some();
    let engine = match Engine::open(options).await {
        Ok(engine) => Arc::new(engine),
        Err(err) => return Err(Failure::from(err).into()),
    };
    for warning in engine.warnings() {
        warn(format_args!("{warning}"));
    }
    if let Some(remote) = &mut remote {
        remote.attach(&engine, &config_dir_of_session).await;
    }
    let (config_dir, cwd, settings_flag, resumed) = sweep;
    let keep = std::iter::once(engine.session_id())
        .chain(resumed)
        .collect();
    let sweep = cleanup::sweep_at_start(config_dir, cwd, settings_flag, keep);
    // apiKeyHelper: its cache is cleared by FX-5 and its command follows the settings.
    // Its key is a secret like one from the environment: redacted from tool results.
    let _key_helper = setup.key_helper.as_ref().map(|h| {
        h.redact_with(engine.secrets().clone());
        h.attach(engine.store())
    });
    if let Some(source) = &setup.replay {
        let demo_rules = if source == super::provider::DEMO {
            format!(
                " (the demo allows its own commands: {})",
                super::demo::ALLOWED_TOOLS.join(", ")
            )
        } else {
            String::new()
        };
        warn(format_args!(
            "replay of {source}: the model's answers are recorded (no model is called); the \
             tool calls run for real, here, with the usual permission checks{demo_rules}"
        ));
    }
    if let Some(lines) = &lines {
        // A one-prompt run waits for its MCP servers before `system/init` (its turn would
        // wait for them anyway), so the line says how each came up.
        if matches!(setup.prompts, Prompts::One(_)) {
            engine.wait_for_mcp_servers(&CancellationToken::new()).await;
        }
        let mut init = engine.init_message();
        // Which service answers (`replay` marks a played-back session); clients that do
        // not know the field ignore it.
        init.extra.insert("provider".into(), provider_name.into());
        // The SDK flags given that strata does not honour yet (also said on stderr).
        if !unsupported_flags.is_empty() {
            init.extra.insert(
                "strata_unsupported_flags".into(),
                unsupported_flags.clone().into(),
            );
        }
        lines.send_json(&SdkMessage::System(SystemMessage::Init(Box::new(init))));
    }
    if let Some(remote) = &mut remote {
        remote.follow(&engine, remote_reporter(&engine, lines.clone()));
    }

    for problem in engine
        .session_start_hooks(if resumed_session { "resume" } else { "startup" })
        .await
    {
        warn(format_args!("{problem}"));
    }

    let interrupts = crate::signals::Interrupts::watch();
    let last = match setup.prompts {
        Prompts::One(prompt) => {
            let turn = interrupts.session.child_token();
            Some(engine.run_prompt(Message::user_text(prompt), turn).await)
        }
        Prompts::Stream => {
            let Some(lines) = &lines else {
                // `check_flags` makes stream-json input imply stream-json output.
                return Err(Failure::usage(
                    "--input-format stream-json needs --output-format stream-json",
                )
                .into());
            };
            let callbacks = CallbackChannel::new(lines.clone());
            let controller =
                Controller::new(engine.clone(), prompt_channel.is_some(), default_model)
                    .with_callbacks(callbacks.clone());
            stream(
                &engine,
                controller,
                Channels {
                    prompts: prompt_channel,
                    callbacks,
                },
                lines,
                &interrupts.session,
            )
            .await?
        }
    };

    for problem in engine.session_end_hooks("other").await {
        warn(format_args!("{problem}"));
    }

    // The conversation is kept past the engine and never freed: the process ends right
    // after this, and the operating system takes the memory back in one go, where
    // freeing a resumed conversation message by message (tens of megabytes of small
    // allocations) adds tens of milliseconds to every `strata -p --resume` (issue 10).
    // Only message data is kept: no handle, file or channel.
    let _conversation = std::mem::ManuallyDrop::new(engine.store().get().messages.clone());
    let closed = match Arc::try_unwrap(engine) {
        Ok(engine) => engine.close().await.map_err(Failure::from),
        // Every task that held the engine has ended by now; if one still does, its
        // transcript writer flushes when the last handle drops.
        Err(_) => Err(Failure::failed(
            "could not close the session cleanly: the session is still in use and was not \
             closed explicitly",
        )),
    };
    sweep.finish();
    if let Some(remote) = remote {
        remote.finish().await;
    }
    if let Some(writer) = writer {
        writer.finish();
    }
    if let Some(result) = &last {
        print_final(setup.output, result);
    }
    let closed = match closed {
        Ok(warnings) => {
            warnings.iter().for_each(|w| warn(format_args!("{w}")));
            Ok(())
        }
        Err(failure) => Err(failure),
    };
    if let Some(code) = interrupts.exit_code() {
        // The signal's exit code wins; a close that failed is still told.
        if let Err(failure) = &closed {
            warn(format_args!("{failure}"));
        }
        return Err(Failure::reported(code).into());
    }
    closed?;
    if last.as_ref().is_some_and(|r| r.is_error) {
        return Err(Failure::reported(1).into());
    }
    Ok(())
}

/// `--input-format stream-json`: prompts from stdin run one after the other while
/// control requests are answered at once. Returns the last turn's result.
async fn stream(
    engine: &Arc<Engine>,
    mut controller: Controller,
    channels: Channels,
    lines: &Lines,
    session: &CancellationToken,
) -> anyhow::Result<Option<ResultMessage>> {
    let Channels { prompts, callbacks } = channels;
    let states = SessionStates::from_env(lines.clone(), engine.session_id());
    if let Some(p) = &prompts {
        p.report_states(states.clone());
    }
    let mut inputs = input::spawn_reader()?;
    let mut input_open = true;
    let mut queue: VecDeque<(Message, Option<String>)> = VecDeque::new();
    let mut running: Option<(JoinHandle<ResultMessage>, CancellationToken)> = None;
    let mut last = None;
    let mut rejected = 0usize;
    loop {
        if running.is_none()
            && !session.is_cancelled()
            && let Some((prompt, uuid)) = queue.pop_front()
        {
            let turn = session.child_token();
            let engine = engine.clone();
            let token = turn.clone();
            if let Some(p) = &prompts {
                p.set_turn(Some(turn.clone()));
            }
            states.send("running");
            let task =
                tokio::spawn(async move { engine.run_prompt_with_uuid(prompt, uuid, token).await });
            running = Some((task, turn));
        }
        if running.is_none() && (!input_open || session.is_cancelled()) {
            break;
        }
        tokio::select! {
            finished = async {
                match running.as_mut() {
                    Some((turn, _)) => Some(turn.await),
                    None => None,
                }
            }, if running.is_some() => {
                running = None;
                if let Some(p) = &prompts {
                    p.set_turn(None);
                }
                if queue.is_empty() {
                    states.send("idle");
                }
                match finished {
                    Some(Ok(result)) => last = Some(result),
                    Some(Err(err)) => {
                        warn(format_args!("the turn failed: {err}"));
                        return Err(Failure::failed("the turn ended abnormally; the session was kept").into());
                    }
                    None => {}
                }
            }
            next = inputs.recv(), if input_open => match next {
                None => {
                    input_open = false;
                    if let Some(p) = &prompts {
                        p.close();
                    }
                    callbacks.close();
                }
                Some(Input::Prompt(message, uuid)) => queue.push_back((message, uuid)),
                Some(Input::Rejected) => rejected += 1,
                Some(Input::Control(request)) => {
                    let turn = running.as_ref().map(|(_, t)| t);
                    lines.send_json(&SdkMessage::ControlResponse(controller.handle(request, turn)));
                }
                Some(Input::BadControl { request_id, error }) => {
                    lines.send_json(&SdkMessage::ControlResponse(ControlResponse::error(request_id, error)));
                }
                Some(Input::Response(response)) => {
                    let id = response.request_id().to_owned();
                    let answered = callbacks.answer(&response)
                        || prompts.as_ref().map(|p| p.answer(response)) == Some(Answered::Prompt);
                    if !answered {
                        warn(format_args!("a control_response for {id:?} answers no open request; ignored"));
                    }
                }
            },
            // Background work that ended while the session was idle (a shell task's
            // notification): the model hears of it in a turn of its own.
            prompt = engine.next_notification_prompt(), if running.is_none() && queue.is_empty() && input_open => {
                queue.push_back((prompt, None));
            }
            () = session.cancelled(), if !queue.is_empty() || input_open => {
                // Ctrl-C: the running turn's token is a child and is cancelled too; queued
                // prompts are dropped and no more input is read.
                queue.clear();
                input_open = false;
                if let Some(p) = &prompts {
                    p.close();
                }
                callbacks.close();
            }
        }
    }
    if last.is_none() && rejected > 0 {
        // stdin held lines but not one usable user message (plain text instead of JSON
        // lines, say): no `result` line was printed, and exit 0 would look like an
        // answered prompt. (Only control requests and no prompt is a valid session.)
        return Err(Failure::failed(format!(
            "strata: no usable user message arrived on stdin ({rejected} line(s) skipped, see \
             above), so nothing was asked; with --input-format stream-json each line is a \
             JSON object such as {{\"type\":\"user\",\"message\":{{\"role\":\"user\",\
             \"content\":\"…\"}}}}"
        ))
        .into());
    }
    Ok(last)
}

/// Tells the user where the remote connection stands: a `system/status` line (with
/// `remote_connection`) for every change in stream-json output, and once on stderr when
/// the server cannot be reached.
fn remote_reporter(engine: &Engine, lines: Option<Lines>) -> crate::remote::Reporter {
    let store = engine.store().clone();
    let session_id = engine.session_id();
    let told = std::sync::atomic::AtomicBool::new(false);
    Arc::new(move |state: &strata_remote::ConnectionState| {
        use strata_state::RemoteConnectionStatus as S;
        if state.status == S::Disconnected && !told.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            warn(format_args!(
                "the remote cannot be reached ({}); the session runs locally and its lines \
                 are published when the server is back",
                state.error.as_deref().unwrap_or("no answer")
            ));
        }
        if let Some(lines) = &lines {
            let mode = store.get().tool_permission_context.mode;
            lines.send_json(&SdkMessage::System(SystemMessage::Status(StatusMessage {
                permission_mode: mode.to_string(),
                status: None,
                remote_connection: Some(state.status.as_str().to_owned()),
                session_id: session_id.clone(),
                uuid: uuid::Uuid::new_v4().to_string(),
            })));
        }
    })
}

/// The client-facing channels of a stream-json session: permission prompts (when the
/// client answers them) and hook callbacks.
struct Channels {
    prompts: Option<Arc<PromptChannel>>,
    callbacks: Arc<CallbackChannel>,
}

/// Prints the outcome for `text` and `json` output (`stream-json` printed it as it ran).
#[allow(clippy::print_stdout)] // printing the answer is what `-p` is for
fn print_final(format: OutputFormat, result: &ResultMessage) {
    let mut out = std::io::stdout().lock();
    let _ = match format {
        OutputFormat::StreamJson => Ok(()),
        // The same object as stream-json's last line, `"type":"result"` included.
        OutputFormat::Json => match serde_json::to_string(&SdkMessage::Result(result.clone())) {
            Ok(line) => writeln!(out, "{line}"),
            Err(err) => {
                warn(format_args!("could not write the result: {err}"));
                Ok(())
            }
        },
        OutputFormat::Text if !result.is_error => {
            writeln!(out, "{}", result.result.as_deref().unwrap_or_default())
        }
        OutputFormat::Text => {
            warn(format_args!("{}", error_text(result)));
            Ok(())
        }
    };
    let _ = out.flush();
}

/// What a failed run says in text mode: its `errors` (the first is the reference's text
/// for the way it ended, `Reached maximum number of turns (1)`).
fn error_text(result: &ResultMessage) -> String {
    let detail = result.errors.join("; ");
    if detail.is_empty() {
        "the run ended in error".into()
    } else {
        detail
    }
}
