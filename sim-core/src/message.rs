//! Message sets: how components from different crates share one engine.
//!
//! An engine carries one message type. Each hardware crate defines the messages it speaks
//! (memory requests, output-queue entries ...) and writes its components generically over any
//! message type `M` that [`Carries`] them; the crate that assembles a system defines one `enum`
//! of all messages and implements `Carries` for each. Dispatch stays static and no component
//! needs to know the others' message types.

/// A message type that can carry values of type `T`.
pub trait Carries<T>: Sized {
    /// Wraps a `T` into this message type.
    fn wrap(value: T) -> Self;
    /// Unwraps a `T`, or gives the message back if it carries something else.
    fn unwrap_as(self) -> Result<T, Self>;
}
