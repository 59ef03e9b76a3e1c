//! Model messages: roles, content blocks (text, thinking, tool use, tool result), usage.
