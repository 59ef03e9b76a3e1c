//! Opening a session: settings, resume, the root store, the transcript, file history,
//! permissions and tools — everything [`Engine`](super::Engine) runs prompts with.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use smol_str::SmolStr;
use strata_config::{FlagSettings, GlobalConfigFile, SettingsFiles, SettingsLocations, paths};
use strata_protocol::permission::PermissionMode;
use strata_protocol::sdk::{SdkMessage, StatusMessage, SystemMessage};
use strata_session::file_history::FileHistoryFiles;
use strata_session::layout::SessionLayout;
use strata_session::resume::{
    LoadedSession, ResumeError, fork, fork_to, latest_in_project, resolve,
};
use strata_session::writer::TranscriptWriter;
use strata_state::effects::{EffectError, SdkStatusPort};
use strata_state::{EffectsHub, Ports, RuntimeFacts, SettingsPermissions, default_app_state};

use super::cost;
use super::live_settings;
use super::record::Recorder;
use super::tool_services::SessionHooks;
use super::{EngineOptions, EventSink, Inner, OpenError, ResumeTarget};
use crate::permissions::{PermissionEnv, initial_mode, launch_rule_errors};
use crate::tools::{ToolContext, ToolRegistry};

/// Opens the session `options` describe.
pub(super) fn open(options: EngineOptions) -> Result<Inner, OpenError> {
    // A scope whose root is alive refuses a second one (UI-5): refused here, before the
    // bootstrap is switched to a new session or a transcript is forked. `create_root`
    // below checks again.
    options.handles.scope.ensure_vacant()?;
    let cwd = std::fs::canonicalize(&options.cwd).unwrap_or_else(|_| options.cwd.clone());
    let project_root = paths::project_root(&cwd);
    let config_dir = options.config_dir.clone();
    let mut warnings = Vec::new();

    // Settings, with the flag source when given.
    let mut locations = SettingsLocations::new(&config_dir, &project_root);
    if let Some(flag) = &options.settings_flag {
        locations = locations.with_flag(FlagSettings::from_arg(flag));
    }
    if let Some(sources) = &options.sdk.setting_sources {
        locations = locations.with_sources(sources);
    }
    let files = SettingsFiles::new(locations);
    let merged = files.load();
    warnings.extend(merged.warnings().map(str::to_owned));
    let global = GlobalConfigFile::new(&config_dir);
    let global_config = global.read().unwrap_or_else(|e| {
        warnings.push(e.to_string());
        Default::default()
    });

    // Resume or start.
    let resumed = match &options.resume {
        Some(target) => Some(load_resumed(&config_dir, &project_root, target)?),
        None => None,
    };
    if let Some(skipped) = resumed
        .as_ref()
        .and_then(|(_, loaded)| loaded.skipped_lines_warning())
    {
        warnings.push(skipped);
    }
    let (session_id, transcript_path, mut loaded) = match resumed {
        None => (
            options.sdk.session_id.unwrap_or_else(uuid::Uuid::new_v4),
            None,
            None,
        ),
        Some((path, loaded)) => {
            let own_id = uuid::Uuid::parse_str(&loaded.session_id)
                .ok()
                .filter(|_| !options.fork_session);
            if !in_config_dir(&config_dir, &path) {
                // A transcript from elsewhere (`--resume some/file.jsonl`) joins this
                // project's sessions, under its own id when that is a UUID not taken
                // here, so it is listed and `--resume <id>` finds it afterwards.
                let id = own_id
                    .filter(|id| {
                        !SessionLayout::new(&config_dir, &project_root, &id.to_string())
                            .transcript()
                            .exists()
                    })
                    .unwrap_or_else(uuid::Uuid::new_v4);
                let layout = SessionLayout::new(&config_dir, &project_root, &id.to_string());
                let outcome = fork_to(&path, &layout).map_err(OpenError::Fork)?;
                (id, Some(outcome.path), Some(loaded))
            } else if let Some(id) = own_id {
                (id, Some(path), Some(loaded))
            } else {
                // A fork — or a foreign session whose id is not a UUID, which strata
                // continues in a copy under a UUID of its own.
                let new_id = uuid::Uuid::new_v4();
                let outcome =
                    fork(&config_dir, &path, &new_id.to_string()).map_err(OpenError::Fork)?;
                (new_id, Some(outcome.path), Some(loaded))
            }
        }
    };
    let layout = match &transcript_path {
        Some(path) => SessionLayout::from_transcript_path(&config_dir, path)
            .ok_or_else(|| OpenError::NotATranscriptPath { path: path.clone() })?,
        None => SessionLayout::new(&config_dir, &project_root, &session_id.to_string()),
    };

    // Bootstrap: identity, cwd, and the cost the resumed session already had (SP-4).
    let bootstrap = options.handles.bootstrap.clone();
    bootstrap.set_original_cwd(&cwd);
    bootstrap.set_cwd(&cwd);
    bootstrap.set_project_root(&project_root);
    bootstrap.switch_session(session_id, Some(layout.project_dir.clone()));
    let mut restored_cost_usd = 0.0;
    if let Some(loaded) = &loaded {
        let root_key = project_root.to_string_lossy();
        let slot = global_config.project(&root_key);
        let restored = cost::restored_cost(slot, session_id, &loaded.usage);
        restored_cost_usd = restored.total_cost_usd;
        cost::restore(&bootstrap, &restored);
    }

    // The conversation and the model (COMPAT: a resumed session keeps its model).
    let mut conversation = loaded.as_mut().map(LoadedSession::model_messages);
    let resumed_interrupted = conversation.as_ref().is_some_and(|c| c.interrupted);
    // Issue 13: the context size a resumed session starts from is the last response's
    // count (as the reference agent reports it), not an estimate of the whole history.
    let resumed_usage = conversation
        .as_ref()
        .and_then(|c| c.last_usage.clone().map(|u| (u, c.usage_covers)));
    let model = options
        .model
        .clone()
        .or_else(|| conversation.as_ref().and_then(|c| c.model.clone()));

    // Permissions and tools. A `--disallowedTools` rule that does not parse would deny
    // nothing: the session does not start rather than run what the user meant to forbid.
    // The rules themselves live in the app state only (its tool permission context, per
    // source); here they are checked and the start-up mode is chosen.
    let launch = &options.permission;
    let launch_errors = launch_rule_errors(launch);
    if let Some(e) = launch_errors
        .iter()
        .find(|e| e.behavior == strata_state::RuleBehavior::Deny)
    {
        return Err(OpenError::DisallowedRule(e.clone()));
    }
    let trusted = crate::hooks::trust::project_trusted(&global_config, &project_root);
    let initial_mode = initial_mode(launch.flags, launch.mode, &merged.settings)?;
    let (_, settings_rule_errors) = SettingsPermissions::parse_merged(&merged);
    let permission_warnings: Vec<String> = settings_rule_errors
        .iter()
        .chain(&launch_errors)
        .map(ToString::to_string)
        .chain(initial_mode.warning.clone())
        .collect();
    warnings.extend(permission_warnings.iter().cloned());
    let mut permission_env = PermissionEnv::new(&project_root);
    // The config directory this session runs with is protected too (it may differ from
    // the environment's, e.g. in tests and embedders).
    permission_env
        .protected_dirs
        .push(std::path::absolute(&config_dir).unwrap_or_else(|_| config_dir.clone()));
    // The user's custom commands and skills (read once, as the reference agent does);
    // a file that does not load is a warning naming it.
    let commands = crate::commands::CommandCatalog::load(&cwd, &project_root, &config_dir);
    let skills = Arc::new(crate::commands::SkillCatalog::load(
        &cwd,
        &project_root,
        &config_dir,
    ));
    warnings.extend(commands.warnings().iter().cloned());
    warnings.extend(skills.warnings().iter().cloned());
    // The files beside a skill's SKILL.md are read like the project's (no prompt).
    permission_env
        .readable_dirs
        .extend(skills.skills().iter().map(|s| s.dir.clone()));
    let permission_env = Arc::new(permission_env);

    // The app state (AS-5) and the root store with its effects hub.
    let flags = options.permission.flags;
    let facts = RuntimeFacts {
        interactive: options.interactive,
        permission_mode_flag: Some(initial_mode.mode),
        bypass_permissions_allowed: flags.dangerously_skip_permissions
            || flags.allow_dangerously_skip_permissions,
        avoid_permission_prompts: options.prompter.is_none(),
        cli_allow: options.permission.allowed_tools.clone(),
        cli_deny: options.permission.disallowed_tools.clone(),
        cli_additional_directories: options
            .permission
            .add_dirs
            .iter()
            .map(PathBuf::from)
            .collect(),
        verbose_flag: options.verbose,
        model: model.map(SmolStr::from),
        ..RuntimeFacts::from_config(&merged, global_config)
    };
    let mut initial = default_app_state(facts);
    if let Some(conversation) = conversation.take() {
        // Moved, not copied: a resumed conversation can be tens of megabytes.
        initial.messages = conversation.messages.into_iter().map(Arc::new).collect();
    }
    if let Some((usage, _)) = &resumed_usage {
        // The model `Inner::model` will report (the window depends on it).
        let model = initial
            .main_loop_model
            .as_ref()
            .map(|m| m.to_string())
            .or_else(|| initial.settings.model.clone())
            .or_else(|| options.provider.default_model().map(str::to_owned))
            .unwrap_or_default();
        initial.context_usage = crate::query::LongSession::usage_for(
            &initial,
            &model,
            crate::context_window::usage_tokens(usage),
        );
    }
    if let Some(loaded) = &mut loaded {
        // SP-3: the file-history domain is rebuilt from the live branch's snapshots.
        initial.file_history = strata_state::FileHistory::resumed(
            std::mem::take(&mut loaded.file_history),
            loaded.latest_snapshot.as_ref(),
        );
    }
    let env = initial.runtime.env.clone();
    let ports = Ports::from_files(
        files.clone(),
        global.clone(),
        bootstrap.clone(),
        &initial.runtime,
    );
    let root = options
        .handles
        .scope
        .create_root(initial, EffectsHub::new(ports))?;
    // User hooks: the settings' `hooks` join those the host brought (SDK callbacks are
    // added at `initialize`). Read once at start, as the reference agent does.
    // A project's own hooks run only in a trusted project (`hooks::trust`).
    let mut sdk = options.sdk;
    let (settings_hooks, untrusted) =
        crate::hooks::trust::session_hooks(&files, merged.settings.extra.get("hooks"), trusted);
    warnings.extend(untrusted);
    if let Some(value) = &settings_hooks {
        let hooks = sdk
            .hooks
            .get_or_insert_with(|| Arc::new(crate::hooks::Hooks::new()));
        warnings.extend(hooks.add_settings(value, "settings hooks"));
    }
    // Agent types: built in, the user's and the project's files, the host's JSON.
    let (mut definitions, agent_warnings) =
        crate::agents::AgentDefinitions::load(&config_dir, &project_root);
    warnings.extend(agent_warnings);
    if let Some(agents) = &sdk.agents {
        warnings.extend(definitions.add_json(agents, "--agents"));
    }
    let definitions = Arc::new(Mutex::new(definitions));
    // A tool a whole-tool deny rule names is not offered to the model at all.
    let tools = {
        let state = root.store().store().get();
        let ctx = &state.tool_permission_context;
        let mut all = crate::tools::default_tools();
        all.push(Arc::new(crate::agents::Agent::new(Arc::clone(
            &definitions,
        ))));
        let registry = ToolRegistry::new(all).filtered(|t| {
            !ctx.denies_tool_entirely(t.name())
                && sdk
                    .tools
                    .as_ref()
                    .is_none_or(|only| only.iter().any(|n| n == t.name()))
        });
        // The structured-output tool is how the answer is given: `--tools` does not
        // remove it (a deny rule naming it still denies its calls).
        match &sdk.structured_output {
            Some(structured) => {
                let mut all = registry.tools().to_vec();
                all.push(structured.tool());
                ToolRegistry::new(all)
            }
            None => registry,
        }
    };
    // MCP servers start now, in the background: the first prompt waits only for what
    // is still connecting when it needs the tool list.
    let mcp = super::mcp::start(
        root.store().store(),
        &global,
        &project_root,
        &cwd,
        &options.mcp_config,
        options.strict_mcp_config,
        &mut warnings,
    );
    let session = session_id.to_string();
    root.store()
        .effects()
        .set_sdk_stream(Some(Arc::new(StatusStream {
            events: Arc::clone(&options.events),
            session_id: session.clone(),
        })));

    // The transcript (created with the first message) and file history.
    let writer = TranscriptWriter::for_session(&layout)?;
    let branch = git_branch(&cwd);
    let recorder = Arc::new(
        Recorder::new(
            writer,
            session.clone(),
            cwd.to_string_lossy().into_owned(),
            branch.clone(),
            loaded.as_ref().and_then(LoadedSession::leaf_uuid),
        )
        .persisting(!sdk.no_session_persistence)
        .mirrored(sdk.transcript_mirror.clone()),
    );
    let file_history = Arc::new(super::file_history::SessionFileHistory::new(
        FileHistoryFiles::new(&layout, &cwd),
        Arc::clone(&recorder),
    ));
    root.store()
        .effects()
        .set_file_history(Some(Arc::clone(&file_history) as _));
    // Everything needed is taken from the loaded transcript; freeing its index and
    // buffers (large for a long session) happens beside the first request, not before.
    if let Some(loaded) = loaded.take() {
        std::thread::spawn(move || drop(loaded));
    }
    let prompt_uuid = Arc::new(Mutex::new(String::new()));
    let store = root.store().store().clone();
    // Background work: its events go to the stream and the main agent's notifications;
    // it stops when the session does.
    let lifetime = tokio_util::sync::CancellationToken::new();
    let notifications = Arc::new(crate::background::Notifications::default());
    let observer: Arc<dyn crate::background::TaskObserver> =
        Arc::new(crate::background::SessionTaskEvents {
            events: Arc::clone(&options.events),
            session_id: session.clone(),
            notifications: Arc::clone(&notifications),
        });
    let agents = crate::agents::AgentRuntime::new(crate::agents::AgentRuntimeParts {
        session_id: session.clone(),
        root: store.clone(),
        provider: Arc::clone(&options.provider),
        permission_env: Arc::clone(&permission_env),
        observer: Arc::clone(&observer),
        notifications,
        bootstrap: bootstrap.clone(),
        layout: layout.clone(),
        file_history: Arc::clone(&file_history),
        prompt_uuid: Arc::clone(&prompt_uuid),
        sdk: sdk.clone(),
        definitions,
        cwd: cwd.clone(),
        git_branch: branch.clone(),
        lifetime: lifetime.clone(),
    });
    // SP-3: background work does not survive a restart; a resumed conversation's model
    // is told which of its tasks are gone, with its next request.
    if let Some(notice) = crate::agents::resume::lost_tasks_notice(
        &crate::agents::resume::lost_tasks(store.get().messages.iter()),
    ) {
        agents.notifications().push_reminder(notice);
    }
    let hooks = SessionHooks {
        file_history: Arc::clone(&file_history),
        layout: layout.clone(),
        store: store.clone(),
        prompt_uuid: Arc::clone(&prompt_uuid),
        shell_tasks: Arc::new(
            crate::tools::bash::background::ShellTasks::new(
                Some(store.clone()),
                layout.tasks_dir(),
            )
            .with_observer(observer),
        ),
        bootstrap: bootstrap.clone(),
        agents: Arc::clone(&agents),
        skills: Arc::clone(&skills),
        provider: Arc::clone(&options.provider),
        default_model: options.provider.default_model().map(str::to_owned),
    };
    let mut tool_context = ToolContext::new(&project_root, Arc::new(hooks));
    tool_context.set_cwd(cwd.clone());
    tool_context.owner = crate::tools::TaskOwner {
        lifetime: lifetime.clone(),
        agent_task_id: None,
        depth: 0,
    };
    // Bash's `cd` check reads the additional directories where they live: the store.
    tool_context.working_dirs = {
        let (store, env) = (store.clone(), Arc::clone(&permission_env));
        crate::tools::WorkingDirs::new(move || {
            env.additional_dirs(&store.get().tool_permission_context)
        })
    };
    tool_context.env = env;
    // Credential variables (built-in and from settings) stay out of tool processes and
    // out of tool results: crate::secrets.
    let (secrets, secret_warnings) = crate::secrets::Secrets::new(
        merged
            .settings
            .credential_env_vars
            .iter()
            .flatten()
            .cloned(),
    );
    warnings.extend(secret_warnings);
    tool_context.secrets = secrets;

    // Live settings (UI-7): edits of the settings files reach the store, whose rules the
    // decisions read, for the whole session.
    let settings_watcher =
        live_settings::watch(&root, files.clone(), permission_warnings, &mut warnings);

    // The system prompt's inputs (memory files, git) are gathered now, `git status` on its
    // own thread; the prompt itself is built at the first request.
    let prompt = crate::prompt::SessionPrompt::gather(
        &cwd,
        &project_root,
        &config_dir,
        tools.names().into_iter().map(str::to_owned).collect(),
        options.system_prompt.clone(),
        options.append_system_prompt.clone(),
    );
    // The skills' descriptions, when the Skill tool is offered.
    if tools.get("Skill").is_some() {
        prompt.set_skills(skills.prompt_section());
    }
    warnings.extend(prompt.warnings().iter().cloned());
    warnings.extend(prompt.use_output_style(merged.value.get("outputStyle")));
    let long =
        crate::query::LongSession::new(prompt, options.max_thinking_tokens, layout.transcript());
    if let Some((_, covers)) = resumed_usage {
        long.counted(covers);
    }

    // The settings' model is read from the store at each request (it may change).
    let default_model = options.provider.default_model().map(str::to_owned);
    Ok(Inner {
        session_id: session,
        _root: root,
        store,
        bootstrap,
        provider: options.provider,
        default_model,
        tools,
        mcp,
        mcp_tools: std::sync::Mutex::new(None),
        tool_context,
        permission_env,
        recorder,
        file_history,
        prompt_uuid,
        events: options.events,
        prompter: options.prompter,
        max_turns: options.max_turns,
        cwd,
        project_root,
        global,
        warnings,
        resumed_interrupted,
        restored_cost_usd,
        current_turn: Mutex::new(None),
        _settings_watcher: settings_watcher,
        sdk,
        long,
        agents,
        lifetime,
        commands,
    })
}

/// Finds and loads the session `target` names.
fn load_resumed(
    config_dir: &Path,
    project_root: &Path,
    target: &ResumeTarget,
) -> Result<(PathBuf, LoadedSession), OpenError> {
    let path = match target {
        ResumeTarget::Session(arg) => {
            resolve(config_dir, project_root, arg).map_err(|e| match e {
                ResumeError::UnknownSession { .. }
                | ResumeError::InvalidId { .. }
                | ResumeError::NoSuchFile { .. } => OpenError::NotFound(arg.clone()),
                other => OpenError::Resume(other),
            })?
        }
        ResumeTarget::Continue => {
            let dir = paths::project_sessions_dir(config_dir, project_root);
            latest_in_project(&dir)
                .map_err(OpenError::Resume)?
                .ok_or(OpenError::NothingToContinue { searched: dir })?
        }
    };
    let loaded = LoadedSession::load(&path).map_err(OpenError::Resume)?;
    // A file with no transcript line is not a session: an error naming it, never an
    // empty session started in its place (issue 16).
    loaded.check_resumable().map_err(OpenError::Resume)?;
    Ok((path, loaded))
}

/// Whether `path` is a transcript under the config directory's `projects/` (the shared
/// containment test, so a linked spelling of the same place counts).
fn in_config_dir(config_dir: &Path, path: &Path) -> bool {
    let projects = strata_config::paths::projects_dir(config_dir);
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    strata_config::paths::resolves_within(&absolute(path), &absolute(&projects))
}

/// The git branch of `dir`'s repository, read from `.git/HEAD` (no process spawned:
/// this runs at start-up). Empty outside a repository or on a detached head. Reads are
/// bounded (a repository may make `.git` or `HEAD` a FIFO or a link to a device).
fn git_branch(dir: &Path) -> String {
    /// Far more than a `HEAD` or a `.git` file holds.
    const LIMIT: u64 = 64 * 1024;
    let read_small = |path: &Path| {
        strata_config::read_bounded(path, LIMIT)
            .ok()
            .flatten()
            .and_then(|bytes| String::from_utf8(bytes).ok())
    };
    let Some(git) = dir.ancestors().map(|d| d.join(".git")).find(|g| g.exists()) else {
        return String::new();
    };
    let head_file = if git.is_file() {
        // A worktree or submodule: `.git` names the real git dir.
        read_small(&git)
            .and_then(|t| t.strip_prefix("gitdir:").map(|p| PathBuf::from(p.trim())))
            .map(|gitdir| {
                if gitdir.is_absolute() {
                    gitdir
                } else {
                    git.parent().map(|p| p.join(&gitdir)).unwrap_or(gitdir)
                }
            })
            .map(|gitdir| gitdir.join("HEAD"))
    } else {
        Some(git.join("HEAD"))
    };
    head_file
        .and_then(|f| read_small(&f))
        .and_then(|head| {
            head.trim()
                .strip_prefix("ref: refs/heads/")
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// FX-1's SDK status stream: every raw permission-mode change becomes a `system/status`
/// line.
struct StatusStream {
    events: Arc<dyn EventSink>,
    session_id: String,
}

impl SdkStatusPort for StatusStream {
    fn permission_mode_changed(&self, mode: PermissionMode) -> Result<(), EffectError> {
        self.events
            .emit(SdkMessage::System(SystemMessage::Status(StatusMessage {
                permission_mode: mode.to_string(),
                status: None,
                remote_connection: None,
                session_id: self.session_id.clone(),
                uuid: uuid::Uuid::new_v4().to_string(),
            })));
        Ok(())
    }
}
