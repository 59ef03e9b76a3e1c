//! The names the model sees: `mcp__<server>__<tool>`, with every character outside
//! `[A-Za-z0-9_-]` of the server and tool names replaced by `_` (the reference agent's
//! rule, so permission rules written for it match strata's tools and the reverse).

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

/// The prefix shared by every tool of `server` (`mcp__<server>__`).
pub fn server_prefix(server: &str) -> String {
    format!("mcp__{}__", normalize(server))
}

/// The tool name the model calls.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{}{}", server_prefix(server), normalize(tool))
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
}
