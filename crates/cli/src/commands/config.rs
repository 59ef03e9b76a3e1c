//! `strata config …`: read and change settings and the global config from the shell.
//!
//! - `get <key>`: the effective value (all settings sources merged); with `--global`, the
//!   value in the user settings file only.
//! - `set <key> <value>`, `unset <key>`: change one key.
//! - `add <key> <value>`, `remove <key> <value>`: add an element to an array (once) or
//!   remove every equal element.
//! - `list [--json]`: every merged value with the file it came from: `user`, `project`,
//!   `local` for strata's own files, `claude user`, `claude project`, `claude local` for
//!   the reference agent's files of those scopes (`~/.claude/settings.json`,
//!   `.claude/settings.json`, `.claude/settings.local.json`), which are read but never
//!   written; `--json` gives each file's path.
//!
//! Keys are dotted paths (`permissions.defaultMode`, `env.FOO`). Values are JSON when they
//! parse as JSON, else strings; where the schema wants a string (`model`, `env.*`,
//! `permissions.defaultMode`, elements of `permissions.allow`, …) the text is taken as the
//! string even when it looks like a number (`env.PORT 8080` stores `"8080"`).
//!
//! Where a key goes: writes go to the project's local settings
//! (`<root>/.strata/settings.local.json`) unless `--global` is given, which selects the
//! user settings (`<config>/settings.json`). The view flags `verbose`,
//! `showExpandedTodos`, `showSpinnerTree` and `fileCheckpointingEnabled` are not settings:
//! they live in the global config (`<config>/config.json`), are read from there by `get`
//! and `list`, and are written only with `--global` (without it the command says so rather
//! than guess). `projects` in `config.json` is strata's own bookkeeping and is not editable
//! here. `$STRATA_CONFIG_DIR` chooses the config dir; the current directory decides the
//! project root.
//!
//! A settings or config file that does not parse is never written: the command fails with
//! one line naming the file, line and column, exit code 1.

mod render;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::Value;
use strata_config::{
    ConfigError, FlagSettings, GlobalConfigFile, SettingsFiles, SettingsLocations, SettingsSource,
    keypath, paths,
};
use strata_protocol::global_config::FLAG_KEYS;
use strata_protocol::settings::{expects_string, expects_string_array};

use crate::exit::Failure;

/// Arguments of `strata config`.
#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
    /// Use the user settings (`<config>/settings.json`) instead of the project's local
    /// settings; required to change global-config keys such as `verbose`.
    #[arg(long, short = 'g', global = true)]
    global: bool,
    /// Extra settings (a file, or inline JSON) merged into the view of `get` and `list`,
    /// as `strata --settings` would.
    #[arg(long, global = true, value_name = "FILE_OR_JSON")]
    settings: Option<String>,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the effective value of a key.
    Get {
        /// Dotted key, e.g. `permissions.defaultMode`.
        key: String,
        /// Print the value as JSON (strings quoted).
        #[arg(long)]
        json: bool,
    },
    /// Set a key.
    Set {
        /// Dotted key, e.g. `env.FOO`.
        key: String,
        /// JSON value, or a plain string (may start with `-`: `-5`).
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
    /// Remove a key.
    Unset {
        /// Dotted key.
        key: String,
    },
    /// Add a value to an array key (nothing happens if it is already there).
    Add {
        /// Dotted key of an array, e.g. `permissions.allow`.
        key: String,
        /// The element (may start with `-`).
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
    /// Remove every equal value from an array key.
    Remove {
        /// Dotted key of an array.
        key: String,
        /// The element (may start with `-`).
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
    /// List every effective value with the source it came from.
    List {
        /// Print JSON: an array of `{key, value, sources, files}`.
        #[arg(long)]
        json: bool,
    },
}

/// Where a key lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Home {
    /// A settings key.
    Settings,
    /// A view flag of the global config.
    GlobalConfig,
}

/// The files this invocation works on.
struct Context {
    settings: SettingsFiles,
    global: GlobalConfigFile,
    write_source: SettingsSource,
}

/// Runs `strata config`.
pub(crate) fn run(args: ConfigArgs) -> anyhow::Result<()> {
    let ctx = context(&args)?;
    match args.command {
        ConfigCommand::Get { key, json } => get(&ctx, &key, args.global, json),
        ConfigCommand::Set { key, value } => {
            let path = parse_key(&key)?;
            let v = parse_value(&path, &value);
            edit(&ctx, &path, args.global, |doc| {
                keypath::set(doc, &path, v.clone()).map(|()| Done::Ok)
            })
        }
        ConfigCommand::Unset { key } => {
            let path = parse_key(&key)?;
            edit(&ctx, &path, args.global, |doc| {
                keypath::remove(doc, &path).map(|_| Done::Ok)
            })
        }
        ConfigCommand::Add { key, value } => {
            let path = parse_key(&key)?;
            let v = parse_element(&path, &value);
            edit(&ctx, &path, args.global, |doc| {
                keypath::add_to_array(doc, &path, v.clone()).map(|_| Done::Ok)
            })
        }
        ConfigCommand::Remove { key, value } => {
            let path = parse_key(&key)?;
            let v = parse_element(&path, &value);
            edit(&ctx, &path, args.global, |doc| {
                keypath::remove_from_array(doc, &path, &v)
                    .map(|n| if n == 0 { Done::Absent } else { Done::Ok })
            })
        }
        ConfigCommand::List { json } => list(&ctx, json),
    }
}

fn context(args: &ConfigArgs) -> anyhow::Result<Context> {
    let config_dir = paths::config_dir().map_err(|e| Failure::usage(format!("strata: {e}")))?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let root = paths::project_root(&cwd);
    let mut locations = SettingsLocations::new(&config_dir, &root);
    if let Some(s) = &args.settings {
        locations = locations.with_flag(FlagSettings::from_arg(s));
    }
    Ok(Context {
        settings: SettingsFiles::new(locations),
        global: GlobalConfigFile::new(&config_dir),
        write_source: if args.global {
            SettingsSource::User
        } else {
            SettingsSource::Local
        },
    })
}

/// Splits a dotted key and decides where it lives.
fn parse_key(key: &str) -> anyhow::Result<Vec<String>> {
    Ok(keypath::parse(key).map_err(|e| Failure::usage(format!("strata: {e}")))?)
}

fn home(path: &[String]) -> anyhow::Result<Home> {
    let first = path.first().map(String::as_str).unwrap_or_default();
    if FLAG_KEYS.contains(&first) {
        if path.len() > 1 {
            return Err(Failure::usage(format!(
                "strata: {first} is a true/false flag in the global config; it has no key {:?}",
                path[1]
            ))
            .into());
        }
        return Ok(Home::GlobalConfig);
    }
    if first == "projects" {
        return Err(Failure::usage(
            "strata: `projects` in config.json is kept by strata itself and cannot be changed \
             with `strata config`",
        )
        .into());
    }
    Ok(Home::Settings)
}

/// A value given as text: JSON when it parses, else the text; for keys the schema types as
/// strings, always a string.
fn parse_value(path: &[String], text: &str) -> Value {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    if expects_string(&p) {
        return as_string(text);
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// An array element given as text (see [`parse_value`]).
fn parse_element(path: &[String], text: &str) -> Value {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    if expects_string_array(&p) {
        return as_string(text);
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// `"\"x\""` (a JSON string) → `x`; anything else → the text itself.
fn as_string(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::String(s)) => Value::String(s),
        _ => Value::String(text.to_owned()),
    }
}

/// What an edit found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Done {
    Ok,
    /// `remove` found no equal element.
    Absent,
}

fn edit(
    ctx: &Context,
    path: &[String],
    global: bool,
    mut apply: impl FnMut(&mut strata_config::JsonObject) -> Result<Done, keypath::KeyPathError>,
) -> anyhow::Result<()> {
    let outcome = match home(path)? {
        Home::GlobalConfig if !global => {
            return Err(Failure::usage(format!(
                "strata: {} lives in the global config ({}); add --global to change it",
                path[0],
                ctx.global.path().display()
            ))
            .into());
        }
        Home::GlobalConfig => ctx.global.update_raw(&mut apply),
        Home::Settings => ctx.settings.update(ctx.write_source, &mut apply),
    };
    let updated = outcome.map_err(file_failure)?;
    match updated.value {
        Ok(Done::Ok) => Ok(()),
        Ok(Done::Absent) => Err(Failure::failed(format!(
            "strata: {} does not contain that value; nothing changed",
            keypath::dotted(path)
        ))
        .into()),
        Err(e) => Err(Failure::failed(format!("strata: {e}; nothing changed")).into()),
    }
}

fn get(ctx: &Context, key: &str, global: bool, json: bool) -> anyhow::Result<()> {
    let path = parse_key(key)?;
    let (value, errors) = match home(&path)? {
        Home::GlobalConfig => {
            let raw = ctx.global.read_raw().map_err(file_failure)?;
            (keypath::get(&raw, &path).cloned(), Vec::new())
        }
        Home::Settings if global => {
            let raw = ctx
                .settings
                .read_source(SettingsSource::User)
                .map_err(file_failure)?;
            (
                raw.and_then(|r| keypath::get(&r, &path).cloned()),
                Vec::new(),
            )
        }
        Home::Settings => {
            let merged = ctx.settings.load();
            (merged.get(&path).cloned(), merged.errors)
        }
    };
    if let Some(v) = &value {
        crate::commands::output::quiet_pipe(render::print_value(v, json))?;
    }
    if !errors.is_empty() {
        return Err(errors_failure(errors).into());
    }
    if value.is_none() {
        return Err(Failure::failed(format!("strata: {key} is not set")).into());
    }
    Ok(())
}

fn list(ctx: &Context, json: bool) -> anyhow::Result<()> {
    let merged = ctx.settings.load();
    let entries = merged.entries();
    let mut errors = merged.errors;
    let mut rows: Vec<render::Row> = entries
        .into_iter()
        .map(|e| render::Row {
            key: keypath::dotted(&e.key),
            value: e.value,
            sources: e
                .from
                .iter()
                .map(strata_config::SourceFile::label)
                .collect(),
            files: e.from.into_iter().map(|f| f.file).collect(),
        })
        .collect();
    match ctx.global.read_raw() {
        Ok(raw) => {
            let file = ctx.global.path().display().to_string();
            rows.extend(FLAG_KEYS.iter().filter_map(|k| {
                raw.get(*k).map(|v| render::Row {
                    key: (*k).to_owned(),
                    value: v.clone(),
                    sources: vec!["global".to_owned()],
                    files: vec![file.clone()],
                })
            }));
        }
        Err(e) => errors.push(e),
    }
    crate::commands::output::quiet_pipe(render::print_rows(&rows, json))?;
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors_failure(errors).into())
    }
}

/// One line per error; parse errors also say that the file was left as it is.
fn errors_failure(errors: Vec<ConfigError>) -> Failure {
    let lines: Vec<String> = errors
        .into_iter()
        .map(|e| file_failure(e).message)
        .collect();
    Failure::failed(lines.join("\n"))
}

fn file_failure(e: ConfigError) -> Failure {
    match e {
        // Inline `--settings` JSON is no file: there is nothing to leave unchanged.
        ConfigError::Parse(p) if p.file == strata_config::INLINE_FLAG_LABEL => {
            Failure::failed(format!("strata: {p}"))
        }
        ConfigError::Parse(p) => Failure::failed(format!(
            "strata: {p} (the file was left unchanged; fix it by hand)"
        )),
        other => Failure::failed(format!("strata: {other}")),
    }
}
