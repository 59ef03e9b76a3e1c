//! The query loop: prompt → model → tools → model … until the turn ends. Being written.
