//! What one settings file contributes to the merge, failing closed (issue 16).
//!
//! A settings file can hold deny rules, so a file that cannot be used must never make the
//! session allow more than before. [`evaluate`] decides what one file contributes from
//! its bytes (or the error reading them) and the file's *last good* contribution, which
//! [`crate::SettingsFiles`] remembers per file for the life of the process (so a live edit
//! that breaks a file keeps what it said before):
//!
//! | the file | contributes | its permission rules |
//! |---|---|---|
//! | valid | everything | its own |
//! | valid JSON, a key other than `permissions` has the wrong type | every other key; the bad key's last good value, if any | its own |
//! | valid JSON, `permissions` has the wrong shape, or a `deny`/`ask` entry is not a rule | every other key | the last good ones; with none, **unknown** |
//! | not JSON (a trailing comma, a `//` comment), or unreadable (a FIFO, a device, too large, no permission) | its last good contribution, whole | the last good ones; with none, **unknown** |
//! | missing | nothing (and the memory is cleared: "no file" is the new good state) | none |
//!
//! "Unknown" rules are reported in [`crate::MergedSettings::unknown_permissions`]; the
//! agent then asks before every tool call (and denies it where no one can be asked),
//! naming the file, line and column. An `allow` entry that is not a rule is not an error
//! here: leaving it out only narrows what is allowed (the agent reports it).
//!
//! Every problem is reported with what strata does about it, so the user knows what is
//! in force until the file is fixed. Nothing here writes.

use serde::Deserialize;
use strata_protocol::settings::Settings;

use crate::document::{self, JsonObject};
use crate::error::{ConfigError, ParseError};

/// What strata does about one problem of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// A key with a wrong value is left out; the rest of the file applies.
    KeyIgnored,
    /// A key with a wrong value keeps its last good value.
    KeyKept,
    /// The file's last good permission rules stay in force.
    PermissionsKept,
    /// The file's last good contribution stays in force, whole.
    FileKept,
    /// There is no last good version: the file's rules are unknown.
    RulesUnknown,
}

impl Fallback {
    /// The words appended to the error.
    pub(crate) fn explain(self) -> &'static str {
        match self {
            Self::KeyIgnored => "this key is ignored; the rest of the file applies",
            Self::KeyKept => "its last good value stays in force until the file is fixed",
            Self::PermissionsKept => {
                "the file's last good permission rules stay in force until it is fixed"
            }
            Self::FileKept => "the file's last good settings stay in force until it is fixed",
            Self::RulesUnknown => {
                "its permission rules cannot be known, so until it is fixed every tool call \
                 asks for approval (and is denied where no one can be asked)"
            }
        }
    }
}

/// What to remember about a file after this reading.
#[derive(Debug)]
pub(crate) enum Remember {
    /// This is the new last good contribution.
    Good(JsonObject),
    /// Keep what was remembered.
    Keep,
    /// The file is gone: forget it.
    Forget,
}

/// The outcome of reading one file.
#[derive(Debug)]
pub(crate) struct Reading {
    /// What goes into the merge (`None`: nothing).
    pub(crate) contribution: Option<JsonObject>,
    /// Problems, each with what is done about it.
    pub(crate) problems: Vec<(ConfigError, Fallback)>,
    /// The problem that makes the file's rules unknown, if any (a copy of the error's
    /// text).
    pub(crate) unknown: Option<String>,
    /// The memory update.
    pub(crate) remember: Remember,
    /// The top-level keys whose values were wrong, each with its error (a copy of the
    /// problem's): for readers that must not go on without one (`remote`).
    pub(crate) bad_keys: Vec<(String, ParseError)>,
}

impl Reading {
    /// A missing file.
    pub(crate) fn missing() -> Self {
        Self {
            contribution: None,
            problems: Vec::new(),
            unknown: None,
            remember: Remember::Forget,
            bad_keys: Vec::new(),
        }
    }

    /// A file that cannot be used at all (unreadable, or not JSON).
    pub(crate) fn unusable(error: ConfigError, last_good: Option<&JsonObject>) -> Self {
        match last_good {
            Some(good) => Self {
                contribution: Some(good.clone()),
                problems: vec![(error, Fallback::FileKept)],
                unknown: None,
                remember: Remember::Keep,
                bad_keys: Vec::new(),
            },
            None => Self {
                contribution: None,
                unknown: Some(error.to_string()),
                problems: vec![(error, Fallback::RulesUnknown)],
                remember: Remember::Keep,
                bad_keys: Vec::new(),
            },
        }
    }
}

/// Decides what a file whose bytes were read contributes (see the module docs).
pub(crate) fn evaluate(bytes: &[u8], label: &str, last_good: Option<&JsonObject>) -> Reading {
    let mut object = match document::parse_object(bytes, label) {
        Ok((object, _)) => object,
        Err(e) => return Reading::unusable(e.into(), last_good),
    };
    let mut problems = Vec::new();
    let mut bad_keys = Vec::new();
    let mut broken_permissions: Option<ParseError> = None;
    // Each round takes out one key whose value is wrong; the first is found in the bytes
    // (exact position), later ones in memory (positioned at their key).
    let mut next = document::schema_error::<Settings>(bytes, label);
    while let Some((key, error)) = next {
        bad_keys.push((key.clone(), error.clone()));
        if object.shift_remove(&key).is_none() {
            // Not expected (the error is under a key of the object); never loop on it.
            problems.push((error.into(), Fallback::KeyIgnored));
            break;
        }
        if key == "permissions" {
            broken_permissions = Some(error);
        } else {
            match last_good.and_then(|g| g.get(&key)) {
                Some(good) => {
                    object.insert(key, good.clone());
                    problems.push((error.into(), Fallback::KeyKept));
                }
                None => problems.push((error.into(), Fallback::KeyIgnored)),
            }
        }
        next = document::object_schema_error::<Settings>(&object).map(|(key, problem)| {
            let (line, column) = document::key_position(bytes, &key);
            let error = ParseError {
                file: label.to_owned(),
                line,
                column,
                problem,
            };
            (key, error)
        });
    }
    if broken_permissions.is_none()
        && let Err(error) = document::parse::<RuleLists>(bytes, label)
    {
        object.shift_remove("permissions");
        broken_permissions = Some(error);
    }
    let Some(error) = broken_permissions else {
        return Reading {
            remember: Remember::Good(object.clone()),
            contribution: Some(object),
            problems,
            unknown: None,
            bad_keys,
        };
    };
    match last_good {
        Some(good) => {
            if let Some(p) = good.get("permissions") {
                object.insert("permissions".to_owned(), p.clone());
            }
            problems.push((error.into(), Fallback::PermissionsKept));
            Reading {
                remember: Remember::Good(object.clone()),
                contribution: Some(object),
                problems,
                unknown: None,
                bad_keys,
            }
        }
        None => {
            let unknown = Some(error.to_string());
            problems.push((error.into(), Fallback::RulesUnknown));
            Reading {
                contribution: Some(object),
                problems,
                unknown,
                // The other keys are good, but remembering them now would remember "no
                // permissions" as good: the next broken version would then widen.
                remember: Remember::Keep,
                bad_keys,
            }
        }
    }
}

/// The `deny` and `ask` lists, each entry checked to be a rule (an `allow` entry that is
/// not one only narrows what is allowed when left out, so it is not checked here).
// Deserialized only to check every entry; the values are not used.
#[derive(Deserialize)]
#[expect(dead_code, reason = "deserialized only to check the entries")]
struct RuleLists {
    permissions: Option<PermissionLists>,
}

#[derive(Deserialize)]
#[expect(dead_code, reason = "deserialized only to check the entries")]
struct PermissionLists {
    deny: Option<Vec<CheckedRule>>,
    ask: Option<Vec<CheckedRule>>,
}

struct CheckedRule;

impl<'de> Deserialize<'de> for CheckedRule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        crate::rule_text::parse_rule(&text)
            .map(|_| CheckedRule)
            .map_err(|m| serde::de::Error::custom(format!("the rule {text:?} is not a rule: {m}")))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn keys(o: &JsonObject) -> Vec<&str> {
        o.keys().map(String::as_str).collect()
    }

    fn good(text: &str) -> JsonObject {
        match serde_json::from_str::<Value>(text).unwrap() {
            Value::Object(o) => o,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_wrong_typed_unrelated_key_is_dropped_and_the_permissions_stay() {
        let r = evaluate(
            br#"{"fastMode": "yes", "permissions": {"deny": ["Bash(rm:*)"]}, "model": 3}"#,
            "f",
            None,
        );
        let c = r.contribution.unwrap();
        assert_eq!(keys(&c), ["permissions"]);
        assert!(r.unknown.is_none());
        assert_eq!(r.problems.len(), 2);
        let text = r.problems[1].0.to_string();
        assert!(text.starts_with("f: line 1, column "), "{text}");
        assert!(text.contains("model"), "{text}");
    }

    #[test]
    fn a_broken_deny_entry_makes_the_rules_unknown_without_a_last_good_version() {
        let r = evaluate(
            b"{\n  \"model\": \"opus\",\n  \"permissions\": {\"deny\": [\"Bash(rm\"]}\n}",
            "f",
            None,
        );
        let unknown = r.unknown.unwrap();
        assert!(unknown.starts_with("f: line 3, column "), "{unknown}");
        assert!(unknown.contains("permissions.deny[0]"), "{unknown}");
        assert_eq!(keys(&r.contribution.unwrap()), ["model"]);
        assert!(matches!(r.remember, Remember::Keep));
    }

    #[test]
    fn broken_permissions_fall_back_to_the_last_good_ones() {
        let last = good(r#"{"permissions": {"deny": ["Bash(rm:*)"]}, "model": "a"}"#);
        let r = evaluate(
            br#"{"permissions": {"deny": "Bash"}, "model": "b"}"#,
            "f",
            Some(&last),
        );
        let c = r.contribution.unwrap();
        assert_eq!(c["permissions"], last["permissions"]);
        assert_eq!(c["model"], "b");
        assert_eq!(r.problems[0].1, Fallback::PermissionsKept);
    }

    #[test]
    fn key_positions_skip_nested_and_quoted_lookalikes() {
        let text = b"{\"a\": {\"model\": 1}, \"s\": \"\\\"model\\\": \",\n \"model\": 2}";
        assert_eq!(document::key_position(text, "model"), (2, 2));
    }
}
