//! Permission modes: the one gate every mode change passes (bypass only with a launch
//! flag and not disabled by settings), the start-up mode, the UI cycle, UI-6 (bypass
//! turned off when settings disable it later), and building the context at launch.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use strata_agent::permissions::{
    BypassAvailability, LaunchFlags, ModeError, PermissionContext, PermissionLaunch,
    check_mode_change, enforce_bypass_availability, initial_mode, next_mode,
};
use strata_protocol::permission::PermissionMode::{self, *};
use strata_protocol::settings::Settings;

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
fn context_set_mode_goes_through_the_gate() {
    let mut c = PermissionContext::new("/p");
    assert_eq!(
        c.set_mode(BypassPermissions),
        Err(ModeError::BypassNotLaunched)
    );
    assert_eq!(c.mode, Default, "unchanged on refusal");
    c.set_mode(Plan).unwrap();
    assert_eq!(c.mode, Plan);
    c.bypass = BypassAvailability::from_parts(true, false);
    c.set_mode(BypassPermissions).unwrap();
    assert_eq!(c.mode, BypassPermissions);
}

#[test]
fn context_from_launch_merges_settings_flags_and_directories() {
    let s = settings(json!({"permissions": {
        "allow": ["Bash(npm test:*)", "Bash(oops"],
        "deny": ["Read(.env)"],
        "defaultMode": "acceptEdits",
        "additionalDirectories": ["../shared", "~/notes"]
    }}));
    let launch = PermissionLaunch {
        flags: ALLOW_DANGEROUS,
        mode: None,
        allowed_tools: vec!["Edit".into()],
        disallowed_tools: vec!["WebFetch".into()],
        add_dirs: vec!["/opt/data".into()],
    };
    let (mut c, warnings) = PermissionContext::from_launch("/srv/proj", &s, &launch).unwrap();
    assert_eq!(c.mode, AcceptEdits);
    assert!(c.bypass.is_available());
    assert_eq!(c.rules.allow.len(), 2);
    assert_eq!(c.rules.deny.len(), 2);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("Bash(oops"), "{warnings:?}");
    let home = c.home.clone().expect("tests run with a home directory");
    assert_eq!(
        c.additional_directories,
        [
            std::path::PathBuf::from("/srv/shared"),
            home.join("notes"),
            "/opt/data".into()
        ]
    );
    c.set_mode(BypassPermissions).unwrap();

    let refused = PermissionLaunch {
        mode: Some(BypassPermissions),
        ..PermissionLaunch::default()
    };
    assert_eq!(
        PermissionContext::from_launch("/p", &Settings::default(), &refused).unwrap_err(),
        ModeError::BypassNotLaunched
    );
}
