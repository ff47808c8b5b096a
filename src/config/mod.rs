//! Experiment configuration: loading TOML with includes, the schema it must follow, and the
//! presets named on the command line.

pub mod dram_errors;
pub mod loader;
pub mod presets;
pub mod schema;

pub use dram_errors::dram_error;
pub use loader::{ConfigError, Document, Location};
pub use schema::ExperimentFile;
