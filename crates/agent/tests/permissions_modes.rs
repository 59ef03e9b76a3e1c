//! Permission modes: the one gate every mode change passes (bypass only with a launch
//! flag and not disabled by settings), the start-up mode, the UI cycle, UI-6 (bypass
//! turned off when settings disable it later), and filing a launch in the app state.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use strata_agent::permissions::{
    BypassAvailability, LaunchFlags, ModeError, PermissionEnv, PermissionLaunch, bypass_of,
    check_mode_change, enforce_bypass_availability, initial_mode, launch_rule_errors, next_mode,
};
use strata_protocol::permission::PermissionMode::{self, *};
use strata_protocol::settings::Settings;
use strata_state::{
    RuleSource, RuntimeFacts, SettingsPermissions, ToolPermissionContext, default_app_state,
};

fn settings(v: serde_json::Value) -> Settings {
    serde_json::from_value(v).unwrap()
}

fn disabling() -> Settings {
    settings(json!({"permissions": {"disableBypassPermissionsMode": "disable"}}))
}

const DANGEROUS: LaunchFlags = LaunchFlags {
    dangerously_skip_permissions: true,
    allow_dangerously_skip_permissions: false,
};
const ALLOW_DANGEROUS: LaunchFlags = LaunchFlags {
    dangerously_skip_permissions: false,
    allow_dangerously_skip_permissions: true,
};

#[test]
fn bypass_gate_requires_a_launch_flag_and_no_settings_veto() {
    let cases = [
        (
            LaunchFlags::default(),
            Settings::default(),
            Err(ModeError::BypassNotLaunched),
        ),
        (DANGEROUS, Settings::default(), Ok(BypassPermissions)),
        (ALLOW_DANGEROUS, Settings::default(), Ok(BypassPermissions)),
        (
            DANGEROUS,
            disabling(),
            Err(ModeError::BypassDisabledBySettings),
        ),
        (
            ALLOW_DANGEROUS,
            disabling(),
            Err(ModeError::BypassDisabledBySettings),
        ),
        (
            LaunchFlags::default(),
            disabling(),
            Err(ModeError::BypassDisabledBySettings),
        ),
    ];
    for (flags, s, expected) in cases {
        let bypass = BypassAvailability::new(flags, &s);
        assert_eq!(
            check_mode_change(BypassPermissions, bypass),
            expected,
            "{flags:?}"
        );
        assert_eq!(bypass.is_available(), expected.is_ok());
        // Every other mode passes whatever the flags.
        for mode in [Default, AcceptEdits, Plan, DontAsk, Auto, Bubble] {
            assert_eq!(check_mode_change(mode, bypass), Ok(mode));
        }
    }
    let msg = ModeError::BypassNotLaunched.to_string();
    assert!(
        msg.contains("--dangerously-skip-permissions")
            && msg.contains("--allow-dangerously-skip-permissions")
    );
    assert!(
        ModeError::BypassDisabledBySettings
            .to_string()
            .contains("disableBypassPermissionsMode")
    );
}

#[test]
fn startup_mode_precedence_and_bypass_checks() {
    let plan_default = settings(json!({"permissions": {"defaultMode": "plan"}}));
    let bypass_default = settings(json!({"permissions": {"defaultMode": "bypassPermissions"}}));
    let none = Settings::default();
    let vetoed = disabling();
    let ok = |m: PermissionMode| Ok::<_, ModeError>((m, false));
    /// The mode and whether a warning was given.
    type Expected = Result<(PermissionMode, bool), ModeError>;
    let cases: Vec<(
        &str,
        LaunchFlags,
        Option<PermissionMode>,
        &Settings,
        Expected,
    )> = vec![
        (
            "nothing set",
            LaunchFlags::default(),
            None,
            &none,
            ok(Default),
        ),
        (
            "settings defaultMode",
            LaunchFlags::default(),
            None,
            &plan_default,
            ok(Plan),
        ),
        (
            "--permission-mode beats settings",
            LaunchFlags::default(),
            Some(AcceptEdits),
            &plan_default,
            ok(AcceptEdits),
        ),
        (
            "--dangerously-skip-permissions starts in bypass",
            DANGEROUS,
            Some(Plan),
            &plan_default,
            ok(BypassPermissions),
        ),
        (
            "--allow-dangerously only makes it reachable",
            ALLOW_DANGEROUS,
            None,
            &none,
            ok(Default),
        ),
        (
            "--permission-mode bypass with allow flag",
            ALLOW_DANGEROUS,
            Some(BypassPermissions),
            &none,
            ok(BypassPermissions),
        ),
        (
            "--permission-mode bypass without a flag",
            LaunchFlags::default(),
            Some(BypassPermissions),
            &none,
            Err(ModeError::BypassNotLaunched),
        ),
        (
            "dangerous flag vetoed by settings",
            DANGEROUS,
            None,
            &vetoed,
            Err(ModeError::BypassDisabledBySettings),
        ),
        (
            "settings bypass default without flag falls back",
            LaunchFlags::default(),
            None,
            &bypass_default,
            Ok((Default, true)),
        ),
        (
            "settings bypass default with flag",
            ALLOW_DANGEROUS,
            None,
            &bypass_default,
            ok(BypassPermissions),
        ),
    ];
    for (name, flags, cli, s, expected) in cases {
        let got = initial_mode(flags, cli, s).map(|i| (i.mode, i.warning.is_some()));
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn ui_cycle_includes_bypass_only_when_available() {
    let walk = |bypass: BypassAvailability| {
        let mut seen = vec![Default];
        let mut m = Default;
        loop {
            m = next_mode(m, bypass);
            if m == Default {
                break seen;
            }
            seen.push(m);
        }
    };
    assert_eq!(
        walk(BypassAvailability::from_parts(true, false)),
        [Default, AcceptEdits, Plan, BypassPermissions]
    );
    assert_eq!(
        walk(BypassAvailability::default()),
        [Default, AcceptEdits, Plan]
    );
    assert_eq!(
        walk(BypassAvailability::from_parts(true, true)),
        [Default, AcceptEdits, Plan]
    );
    assert_eq!(next_mode(DontAsk, BypassAvailability::default()), Default);
}

#[test]
fn ui6_bypass_is_turned_off_when_settings_disable_it_later() {
    let launched = BypassAvailability::new(DANGEROUS, &Settings::default());
    assert_eq!(
        enforce_bypass_availability(BypassPermissions, launched),
        BypassPermissions
    );
    let later = launched.with_settings(&disabling());
    assert!(later.disabled_by_settings());
    assert_eq!(
        enforce_bypass_availability(BypassPermissions, later),
        Default
    );
    assert_eq!(
        enforce_bypass_availability(Plan, later),
        Plan,
        "other modes stay"
    );
}

#[test]
fn the_gate_reads_bypass_from_the_store_context_and_its_settings() {
    let mut state = ToolPermissionContext::default();
    let plain = Settings::default();
    assert_eq!(
        check_mode_change(BypassPermissions, bypass_of(&state, &plain)),
        Err(ModeError::BypassNotLaunched)
    );
    assert_eq!(check_mode_change(Plan, bypass_of(&state, &plain)), Ok(Plan));
    state.is_bypass_permissions_mode_available = true;
    assert_eq!(
        check_mode_change(BypassPermissions, bypass_of(&state, &plain)),
        Ok(BypassPermissions)
    );
    assert_eq!(
        check_mode_change(BypassPermissions, bypass_of(&state, &disabling())),
        Err(ModeError::BypassDisabledBySettings)
    );
}

/// The launch as the engine opens it: the start-up mode through the gate, the settings'
/// and the command line's rules and directories filed in the app state, the rules that
/// do not parse reported.
#[test]
fn a_launch_files_settings_flags_and_directories_in_the_app_state() {
    let s = settings(json!({"permissions": {
        "allow": ["Bash(npm test:*)", "Bash(oops"],
        "deny": ["Read(.env)"],
        "defaultMode": "acceptEdits",
        "additionalDirectories": ["../shared", "~/notes"]
    }}));
    let launch = PermissionLaunch {
        flags: ALLOW_DANGEROUS,
        mode: None,
        allowed_tools: vec!["Edit".into(), "Bash(x".into()],
        disallowed_tools: vec!["WebFetch".into()],
        add_dirs: vec!["/opt/data".into()],
    };
    let mode = initial_mode(launch.flags, launch.mode, &s).unwrap().mode;
    let (by_source, settings_errors) =
        SettingsPermissions::parse_settings(&s, RuleSource::LocalSettings);
    let state = default_app_state(RuntimeFacts {
        settings: std::sync::Arc::new(s.clone()),
        settings_permissions: by_source,
        permission_mode_flag: Some(mode),
        bypass_permissions_allowed: true,
        cli_allow: launch.allowed_tools.clone(),
        cli_deny: launch.disallowed_tools.clone(),
        cli_additional_directories: launch.add_dirs.iter().map(Into::into).collect(),
        ..std::default::Default::default()
    });
    let ctx = &state.tool_permission_context;
    assert_eq!(ctx.mode, AcceptEdits);
    assert!(bypass_of(ctx, &s).is_available());
    assert_eq!(ctx.always_allow_rules.len(), 2);
    assert_eq!(ctx.always_deny_rules.len(), 2);
    assert_eq!(settings_errors.len(), 1);
    assert!(settings_errors[0].to_string().contains("Bash(oops"));
    let flag_errors = launch_rule_errors(&launch);
    assert_eq!(flag_errors.len(), 1);
    assert!(
        flag_errors[0].to_string().contains("--allowedTools"),
        "{}",
        flag_errors[0]
    );
    let env = PermissionEnv::new("/srv/proj");
    let home = env.home.clone().expect("tests run with a home directory");
    let mut dirs = env.additional_dirs(ctx);
    dirs.sort();
    let mut expected = vec![
        std::path::PathBuf::from("/srv/shared"),
        home.join("notes"),
        "/opt/data".into(),
    ];
    expected.sort();
    assert_eq!(dirs, expected);

    let refused = PermissionLaunch {
        mode: Some(BypassPermissions),
        ..PermissionLaunch::default()
    };
    assert_eq!(
        initial_mode(refused.flags, refused.mode, &Settings::default()).unwrap_err(),
        ModeError::BypassNotLaunched
    );
}
