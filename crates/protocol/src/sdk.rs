//! Headless mode messages: the `stream-json` output shapes and the control protocol. (Not built yet.)
