//! Experiment configuration: loading TOML with includes, and the schema it must follow.

pub mod loader;
pub mod schema;

pub use loader::{ConfigError, Document, Location};
pub use schema::ExperimentFile;
