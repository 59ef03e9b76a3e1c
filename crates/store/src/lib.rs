//! strata-store. Being written.
