//! DRAM preset errors at the key they are about.
//!
//! The DRAM model validates a preset and names what is wrong by key path within the preset
//! (`controller.read_queue`, `constraint 3`); it knows nothing of files. A preset is a file of
//! its own (`dae-sim mem --memory`) or a table of a system (`[memory.dram]`, usually an
//! `include` of `configs/memory/`). [`dram_error`] turns the model's error into a config error
//! at that key, so that it names the file and line a user has to edit: the preset's own, even
//! when it was included.

use crate::config::{ConfigError, Document};
use mem_model::dram::DramError;

/// The config error of preset error `e`, for the preset held in `doc` at `table` (a key path
/// such as `system[0].memory.dram`, or `""` when the document is the preset).
pub fn dram_error(doc: &Document, table: &str, e: &DramError) -> ConfigError {
    let under = |key: &str| if table.is_empty() { key.to_owned() } else { format!("{table}.{key}") };
    let constraint = |context: &str| {
        context
            .strip_prefix("constraint ")
            .and_then(|i| i.parse::<usize>().ok())
            .map(|i| format!("constraints[{i}]"))
    };
    let key = match e {
        DramError::UnknownMapping { .. } => Some("controller.mapping".to_owned()),
        DramError::UnknownPolicy { field, .. } => Some(format!("controller.{field}")),
        DramError::Zero { what } | DramError::Invalid { what, .. } => Some(what.clone()),
        DramError::BadConstraint { index, .. } => Some(format!("constraints[{index}]")),
        DramError::UnknownTiming { context, .. } | DramError::BadExpression { context, .. } => {
            Some(constraint(context).map_or_else(|| context.clone(), |c| format!("{c}.latency")))
        }
        DramError::UnknownLevel { context, .. } => {
            Some(constraint(context).map_or_else(|| context.clone(), |c| format!("{c}.level")))
        }
        DramError::UnknownCommand { context, name, .. } => constraint(context).map(|c| {
            // Point at the list element that holds the unknown name.
            for list in ["preceding", "following"] {
                if let Some(toml::Value::Array(items)) = doc.get(&under(&format!("{c}.{list}")))
                    && let Some(i) = items.iter().position(|v| v.as_str() == Some(name))
                {
                    return format!("{c}.{list}[{i}]");
                }
            }
            c
        }),
        DramError::Clock(_) => Some("clock".to_owned()),
        // Statistics collisions, and variants added after this was written: the table only.
        #[allow(unreachable_patterns)]
        _ => None,
    };
    let message = e.to_string();
    match key {
        Some(key) => {
            // "controller.read_queue must be above zero" and "constraint 3: unknown command"
            // read better after the key as "must be above zero" and "unknown command".
            let context = match e {
                DramError::UnknownTiming { context, .. }
                | DramError::BadExpression { context, .. }
                | DramError::UnknownLevel { context, .. }
                | DramError::UnknownCommand { context, .. } => context.as_str(),
                _ => key.as_str(),
            };
            let rest = message.strip_prefix(context).map(|r| r.trim_start_matches(':').trim_start());
            doc.error_at(&under(&key), rest.filter(|r| !r.is_empty()).unwrap_or(&message))
        }
        None => doc.error_at(table, message),
    }
}
