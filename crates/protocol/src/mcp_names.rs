//! The names the model sees: `mcp__<server>__<tool>`, with every character outside
//! `[A-Za-z0-9_-]` of the server and tool names replaced by `_` (the reference agent's
//! rule, so permission rules written for it match strata's tools and the reverse).
//!
//! The model APIs refuse tool names longer than 64 characters (`^[a-zA-Z0-9_-]{1,64}$`),
//! and a long server name plus a long tool name passes that easily. The reference
//! agent documents no shortening (its users rename servers or tools), so strata
//! shortens deterministically, keeping the shape permission rules rely on:
//!
//! - a server name longer than [`MAX_SERVER`] characters (after the character rule)
//!   becomes its first 23 characters, `_` and 8 hex digits of a hash of the whole
//!   name (32 characters), so the prefix `mcp__<server>__` stays at most 55;
//! - a whole name still longer than 64 keeps as much of the tool name as fits and
//!   ends in `_` and 8 hex digits of a hash of the whole server and tool names.
//!
//! Names of 64 characters or fewer are never changed; shortened names stay unique in
//! practice (the hash covers the full names) and are the same on every run. The hash
//! is of the names after the character rule, which is what a permission rule spells:
//! [`canonical_rule_name`] maps a rule's `mcp__<server>[__<tool>]` to the name the tool
//! really has, so a rule written with the full names still matches (a deny rule on a
//! long server name must not stop matching because its tools' names were shortened).
//!
//! Here, below both the MCP client and the permission rules, because both need the
//! same names.

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn normalize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The longest tool name the model APIs accept.
pub const MAX_TOOL_NAME: usize = 64;

/// The longest server part kept whole; longer ones are shortened (see the module docs).
pub const MAX_SERVER: usize = 48;

/// 8 lower-case hex digits of a stable hash (FNV-1a, 64 bits, folded to 32) of `parts`,
/// each followed by a NUL so `("ab", "c")` and `("a", "bc")` differ.
fn short_hash(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{:08x}", (h ^ (h >> 32)) as u32)
}

/// The server part of the names: the character rule, shortened past [`MAX_SERVER`].
fn server_part(server: &str) -> String {
    let normalized = normalize(server);
    if normalized.len() <= MAX_SERVER {
        return normalized;
    }
    // `normalize` leaves only ASCII, so byte slicing is at a character boundary.
    format!("{}_{}", &normalized[..23], short_hash(&[&normalized]))
}

/// The prefix shared by every tool of `server` (`mcp__<server>__`).
pub fn server_prefix(server: &str) -> String {
    format!("mcp__{}__", server_part(server))
}

/// The tool name the model calls: at most [`MAX_TOOL_NAME`] characters.
pub fn tool_name(server: &str, tool: &str) -> String {
    let prefix = server_prefix(server);
    let tool_part = normalize(tool);
    if prefix.len() + tool_part.len() <= MAX_TOOL_NAME {
        return format!("{prefix}{tool_part}");
    }
    // The prefix is at most 5 + MAX_SERVER + 2 = 55, so `keep` cannot underflow.
    let keep = MAX_TOOL_NAME - prefix.len() - 9;
    format!(
        "{prefix}{}_{}",
        &tool_part[..keep],
        short_hash(&[&normalize(server), &tool_part])
    )
}

/// The tool name a permission rule's `mcp__<server>` or `mcp__<server>__<tool>` means,
/// shortened as the tools' own names are; any other rule name is returned as it is.
/// The server part ends at the first `__` (the character rule keeps single `_`s).
pub fn canonical_rule_name(rule_tool: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let Some(rest) = rule_tool.strip_prefix("mcp__") else {
        return Cow::Borrowed(rule_tool);
    };
    match rest.split_once("__") {
        Some((server, tool)) if server.len() > MAX_SERVER || rule_tool.len() > MAX_TOOL_NAME => {
            Cow::Owned(tool_name(server, tool))
        }
        None if server_len_over(rest) => {
            let prefix = server_prefix(rest);
            Cow::Owned(prefix.trim_end_matches('_').to_owned())
        }
        _ => Cow::Borrowed(rule_tool),
    }
}

fn server_len_over(server: &str) -> bool {
    normalize(server).len() > MAX_SERVER
}

/// True for a name of an MCP tool (any server).
pub fn is_mcp_tool_name(name: &str) -> bool {
    name.strip_prefix("mcp__")
        .is_some_and(|rest| rest.contains("__"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_reference_character_rules() {
        assert_eq!(tool_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(
            tool_name("my server.v2", "get-sum"),
            "mcp__my_server_v2__get-sum"
        );
        assert_eq!(tool_name("s", "a/b:c"), "mcp__s__a_b_c");
        assert!(is_mcp_tool_name("mcp__s__t"));
        assert!(!is_mcp_tool_name("mcp__s"));
        assert!(!is_mcp_tool_name("Bash"));
    }

    /// Issue 25: the APIs refuse tool names over 64 characters.
    #[test]
    fn i25_1_long_names_are_shortened_to_64_deterministically_and_stay_unique() {
        let exactly = format!("mcp__srv__{}", "t".repeat(54));
        assert_eq!(exactly.len(), 64);
        assert_eq!(tool_name("srv", &"t".repeat(54)), exactly);

        let long_tool = "synchronize-all-customer-data-across-multiple-systems-now";
        let a = tool_name("enterprise-database-management", long_tool);
        assert_eq!(a.len(), 64, "{a}");
        assert!(a.starts_with("mcp__enterprise-database-management__synchronize"));
        assert!(is_mcp_tool_name(&a));
        assert_eq!(a, tool_name("enterprise-database-management", long_tool));
        // Two tools that differ only past the cut get different names.
        let b = tool_name(
            "enterprise-database-management",
            "synchronize-all-customer-data-across-multiple-systems-later",
        );
        assert_ne!(a, b);
        assert_eq!(a[..55], b[..55]);

        // A server name too long for any tool keeps a readable start and its prefix
        // is shared by all its tools.
        let server = "a-very-long-server-name-from-a-marketplace-0123456789abcdef";
        let prefix = server_prefix(server);
        assert_eq!(prefix.len(), 5 + 32 + 2, "{prefix}");
        assert!(prefix.starts_with("mcp__a-very-long-server-name_"));
        let echo = tool_name(server, "echo");
        assert_eq!(echo, format!("{prefix}echo"));
        let long = tool_name(server, &"x".repeat(80));
        assert!(long.starts_with(&prefix) && long.len() == 64, "{long}");
        assert!(is_mcp_tool_name(&long));
        for name in [&a, &b, &echo, &long] {
            assert!(
                name.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-'),
                "{name}"
            );
        }
    }

    /// Regression (review of issue 25): shortening long names made a rule that spells
    /// the server or tool in full stop matching, so a deny rule on a long server name
    /// no longer denied its tools.
    #[test]
    fn regression_a_rule_spelling_a_long_name_in_full_means_the_shortened_tool() {
        let server = "a.very.long.server.name.that.goes.on.past.the.limit";
        let full_server = format!("mcp__{}", normalize(server));
        let prefix = server_prefix(server);
        assert_eq!(
            canonical_rule_name(&full_server),
            prefix.trim_end_matches('_')
        );
        let tool = "x".repeat(80);
        let full_tool = format!("{full_server}__{tool}");
        assert_eq!(canonical_rule_name(&full_tool), tool_name(server, &tool));
        assert_eq!(
            canonical_rule_name(&format!("{full_server}__echo")),
            tool_name(server, "echo")
        );
        // Short names and other tools are left alone.
        assert_eq!(canonical_rule_name("mcp__s__t"), "mcp__s__t");
        assert_eq!(canonical_rule_name("Bash"), "Bash");
    }
}
