//! Why a DRAM preset or model could not be built.
//!
//! Every error names the offending value and, for names, lists the valid ones.

use sim_core::{ClockError, StatsError};
use thiserror::Error;

/// Errors from resolving a preset or building a [`crate::dram::Dram`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DramError {
    /// An address mapping name is not one of the schemes.
    #[error("unknown address mapping \"{name}\"; valid mappings: {valid}")]
    UnknownMapping {
        /// The name as written.
        name: String,
        /// The valid names.
        valid: &'static str,
    },
    /// A constraint or latency expression uses a timing the preset does not define.
    #[error(
        "{context}: unknown timing \"{name}\" in \"{expr}\" (the preset's [timing] table defines: {known})"
    )]
    UnknownTiming {
        /// Where the expression is ("constraint 7", "latency.read").
        context: String,
        /// The unknown name.
        name: String,
        /// The whole expression.
        expr: String,
        /// The names the preset defines.
        known: String,
    },
    /// An expression is malformed or its value is negative.
    #[error("{context}: bad expression \"{expr}\": {reason}")]
    BadExpression {
        /// Where the expression is.
        context: String,
        /// The expression.
        expr: String,
        /// What is wrong.
        reason: String,
    },
    /// A command name is not one of the commands.
    #[error("{context}: unknown command \"{name}\"; valid commands: {valid}")]
    UnknownCommand {
        /// Where it is.
        context: String,
        /// The name as written.
        name: String,
        /// The valid names.
        valid: &'static str,
    },
    /// A level name is not one of the levels.
    #[error("{context}: unknown level \"{name}\"; valid levels: {valid}")]
    UnknownLevel {
        /// Where it is.
        context: String,
        /// The name as written.
        name: String,
        /// The valid names.
        valid: &'static str,
    },
    /// A policy name (scheduler, page policy, refresh mode) is not a known one.
    #[error("controller.{field}: unknown value \"{name}\"; valid values: {valid}")]
    UnknownPolicy {
        /// The field.
        field: &'static str,
        /// The name as written.
        name: String,
        /// The valid names.
        valid: &'static str,
    },
    /// A count or size that must be positive is zero (a zero-sized queue, no banks ...).
    #[error("{what} must be above zero")]
    Zero {
        /// What was zero.
        what: String,
    },
    /// A value is outside what the model supports.
    #[error("{what}: {reason}")]
    Invalid {
        /// The value.
        what: String,
        /// Why it is refused.
        reason: String,
    },
    /// A constraint row is impossible.
    #[error("constraint {index} ({summary}): {reason}")]
    BadConstraint {
        /// Index in the preset's constraint list (from 0).
        index: usize,
        /// The row, in short.
        summary: String,
        /// What is wrong.
        reason: String,
    },
    /// The command clock cannot be built.
    #[error("clock: {0}")]
    Clock(#[from] ClockError),
    /// A statistic name collides.
    #[error(transparent)]
    Stats(#[from] StatsError),
}
