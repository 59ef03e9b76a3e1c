//! Process-wide caches (system prompt sections, plan slugs by session, invoked skills, agent
//! colours) and the in-memory error log capped at [`ERROR_LOG_CAPACITY`] entries (BS-2).
//!
//! Each cache has its own short lock: they are unrelated, and one slow reader of the skill
//! list must not delay a plan-slug lookup.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use uuid::Uuid;

use crate::Bootstrap;
use crate::sync::lock;

/// How many entries the error log keeps; older ones are dropped first.
pub const ERROR_LOG_CAPACITY: usize = 100;

/// A skill the model invoked in this session, kept so its instructions survive compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvokedSkill {
    /// The skill's name (unique key: invoking it again replaces the entry).
    pub name: String,
    /// Where the skill was loaded from, if it came from a file.
    pub path: Option<PathBuf>,
    /// The skill's expanded instructions as given to the model.
    pub content: Arc<str>,
    /// When it was (last) invoked.
    pub invoked_at: SystemTime,
}

/// One entry of the in-memory error log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedError {
    /// When it was logged.
    pub at: SystemTime,
    /// What went wrong, in words a bug report can quote.
    pub message: String,
}

#[derive(Default)]
pub(crate) struct Caches {
    system_prompt_sections: Mutex<HashMap<String, Arc<str>>>,
    pub(crate) plan_slugs: Mutex<HashMap<Uuid, Arc<str>>>,
    invoked_skills: Mutex<Vec<InvokedSkill>>,
    agent_colours: Mutex<HashMap<String, Arc<str>>>,
}

#[derive(Default)]
pub(crate) struct ErrorLog {
    entries: Mutex<VecDeque<LoggedError>>,
    dropped: AtomicU64,
}

/// Caches (BS-2).
impl Bootstrap {
    /// A computed system prompt section, if cached under `name`.
    pub fn system_prompt_section(&self, name: &str) -> Option<Arc<str>> {
        lock(&self.caches.system_prompt_sections).get(name).cloned()
    }

    /// Caches a computed system prompt section.
    pub fn cache_system_prompt_section(&self, name: &str, content: Arc<str>) {
        lock(&self.caches.system_prompt_sections).insert(name.to_owned(), content);
    }

    /// Drops every cached system prompt section (e.g. after `/clear` or a settings change
    /// that alters the prompt).
    pub fn clear_system_prompt_sections(&self) {
        lock(&self.caches.system_prompt_sections).clear();
    }

    /// The plan slug (the plan file's name) of `session`, if one was assigned.
    pub fn plan_slug(&self, session: Uuid) -> Option<Arc<str>> {
        lock(&self.caches.plan_slugs).get(&session).cloned()
    }

    /// Assigns the plan slug of `session`. [`Bootstrap::switch_session`] forgets the old
    /// session's slug (BS-5).
    pub fn set_plan_slug(&self, session: Uuid, slug: &str) {
        lock(&self.caches.plan_slugs).insert(session, Arc::from(slug));
    }

    /// Records an invoked skill; invoking a skill again replaces its entry and moves it to
    /// the end (the list is in order of last invocation).
    pub fn record_invoked_skill(&self, skill: InvokedSkill) {
        let mut skills = lock(&self.caches.invoked_skills);
        skills.retain(|existing| existing.name != skill.name);
        skills.push(skill);
    }

    /// The skills invoked in this session, oldest invocation first.
    pub fn invoked_skills(&self) -> Vec<InvokedSkill> {
        lock(&self.caches.invoked_skills).clone()
    }

    /// Forgets every invoked skill (a new conversation).
    pub fn clear_invoked_skills(&self) {
        lock(&self.caches.invoked_skills).clear();
    }

    /// The colour assigned to an agent type, if any.
    pub fn agent_colour(&self, agent_type: &str) -> Option<Arc<str>> {
        lock(&self.caches.agent_colours).get(agent_type).cloned()
    }

    /// Assigns a colour to an agent type.
    pub fn set_agent_colour(&self, agent_type: &str, colour: &str) {
        lock(&self.caches.agent_colours).insert(agent_type.to_owned(), Arc::from(colour));
    }

    /// The colour of `agent_type`, assigning one first if it has none: the first colour of
    /// `palette` not used by another agent type, or (all used) the palette entry chosen by
    /// rotation. Check and assignment happen under one lock, so agents spawned at the same
    /// moment never receive the same free colour. `None` only for an empty palette.
    pub fn agent_colour_or_assign(&self, agent_type: &str, palette: &[&str]) -> Option<Arc<str>> {
        let mut colours = lock(&self.caches.agent_colours);
        if let Some(colour) = colours.get(agent_type) {
            return Some(Arc::clone(colour));
        }
        let free = palette
            .iter()
            .find(|candidate| !colours.values().any(|used| &**used == **candidate));
        let chosen = match free {
            Some(colour) => *colour,
            None => *palette.get(colours.len() % palette.len().max(1))?,
        };
        let colour: Arc<str> = Arc::from(chosen);
        colours.insert(agent_type.to_owned(), Arc::clone(&colour));
        Some(colour)
    }
}

/// The in-memory error log (BS-2).
impl Bootstrap {
    /// Appends to the error log, dropping the oldest entry when it already holds
    /// [`ERROR_LOG_CAPACITY`] entries.
    ///
    /// ```
    /// use std::path::Path;
    /// use strata_bootstrap::{Bootstrap, ERROR_LOG_CAPACITY};
    ///
    /// let state = Bootstrap::new(Path::new("/"));
    /// for n in 0..ERROR_LOG_CAPACITY + 5 {
    ///     state.log_error(format!("failure {n}"));
    /// }
    /// let errors = state.errors();
    /// assert_eq!(errors.len(), ERROR_LOG_CAPACITY);
    /// assert_eq!(errors[0].message, "failure 5");
    /// assert_eq!(state.errors_dropped(), 5);
    /// ```
    pub fn log_error(&self, message: impl Into<String>) {
        let entry = LoggedError {
            at: SystemTime::now(),
            message: message.into(),
        };
        let mut entries = lock(&self.errors.entries);
        if entries.len() >= ERROR_LOG_CAPACITY {
            entries.pop_front();
            self.errors.dropped.fetch_add(1, Ordering::Relaxed);
        }
        entries.push_back(entry);
    }

    /// The logged errors, oldest first (at most [`ERROR_LOG_CAPACITY`]).
    pub fn errors(&self) -> Vec<LoggedError> {
        lock(&self.errors.entries).iter().cloned().collect()
    }

    /// How many entries were dropped to respect the cap.
    pub fn errors_dropped(&self) -> u64 {
        self.errors.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn skill(name: &str, content: &str) -> InvokedSkill {
        InvokedSkill {
            name: name.to_owned(),
            path: None,
            content: Arc::from(content),
            invoked_at: SystemTime::now(),
        }
    }

    #[test]
    fn bs2_error_log_keeps_the_newest_100_entries() {
        let state = Bootstrap::new(Path::new("/"));
        for n in 0..250 {
            state.log_error(format!("error {n}"));
        }
        let errors = state.errors();
        assert_eq!(errors.len(), ERROR_LOG_CAPACITY);
        assert_eq!(errors[0].message, "error 150");
        assert_eq!(errors[99].message, "error 249");
        assert_eq!(state.errors_dropped(), 150);
    }

    #[test]
    fn bs2_error_log_cap_holds_under_concurrent_logging() {
        let state = Bootstrap::new(Path::new("/"));
        std::thread::scope(|scope| {
            for thread in 0..4 {
                let state = &state;
                scope.spawn(move || {
                    for n in 0..100 {
                        state.log_error(format!("t{thread} e{n}"));
                    }
                });
            }
        });
        assert_eq!(state.errors().len(), ERROR_LOG_CAPACITY);
        assert_eq!(state.errors_dropped(), 300);
    }

    #[test]
    fn bs2_invoked_skills_replace_by_name_in_invocation_order() {
        let state = Bootstrap::new(Path::new("/"));
        state.record_invoked_skill(skill("review", "v1"));
        state.record_invoked_skill(skill("deploy", "d"));
        state.record_invoked_skill(skill("review", "v2"));
        let names: Vec<(String, String)> = state
            .invoked_skills()
            .into_iter()
            .map(|s| (s.name, s.content.to_string()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("deploy".to_owned(), "d".to_owned()),
                ("review".to_owned(), "v2".to_owned())
            ]
        );
        state.clear_invoked_skills();
        assert!(state.invoked_skills().is_empty());
    }

    #[test]
    fn bs2_system_prompt_sections_cache_and_clear() {
        let state = Bootstrap::new(Path::new("/"));
        assert_eq!(state.system_prompt_section("env"), None);
        state.cache_system_prompt_section("env", Arc::from("cwd: /"));
        assert_eq!(
            state.system_prompt_section("env").as_deref(),
            Some("cwd: /")
        );
        state.clear_system_prompt_sections();
        assert_eq!(state.system_prompt_section("env"), None);
    }

    #[test]
    fn bs2_agent_colours_are_assigned_once_and_distinct_while_the_palette_lasts() {
        let state = Bootstrap::new(Path::new("/"));
        let palette = ["red", "blue"];
        let explorer = state.agent_colour_or_assign("explorer", &palette);
        let planner = state.agent_colour_or_assign("planner", &palette);
        assert_eq!(explorer.as_deref(), Some("red"));
        assert_eq!(planner.as_deref(), Some("blue"));
        assert_eq!(state.agent_colour_or_assign("explorer", &palette), explorer);
        // Palette exhausted: rotation, still a palette colour.
        let third = state.agent_colour_or_assign("tester", &palette);
        assert!(third.as_deref().is_some_and(|c| palette.contains(&c)));
        assert_eq!(state.agent_colour_or_assign("other", &[]), None);
        state.set_agent_colour("planner", "green");
        assert_eq!(state.agent_colour("planner").as_deref(), Some("green"));
    }
}
