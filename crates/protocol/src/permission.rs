//! Permission modes: the internal set, their external (public) names, and parsing.
