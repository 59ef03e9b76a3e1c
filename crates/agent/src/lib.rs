//! The strata agent: tool-use contexts, sub-agents, providers, query loop, tools, permissions. Not built yet.
