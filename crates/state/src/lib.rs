//! The strata application state, selectors, transitions and the change-effects hub. Not built yet.
