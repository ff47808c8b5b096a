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
    /// The `T` it carries, by reference, where it holds one as such (`None` by default: for a
    /// message that converts on unwrapping, or carries something else).
    fn view(&self) -> Option<&T> {
        None
    }
}

/// Implements [`Carries`] for each `Variant(Type)` of a message enum:
/// `sim_core::carries!(Msg { Req(MemRequest), Resp(MemResponse) });`
#[macro_export]
macro_rules! carries {
    ($msg:ident { $($variant:ident($ty:ty)),+ $(,)? }) => {
        $(
            impl $crate::Carries<$ty> for $msg {
                fn wrap(value: $ty) -> Self {
                    $msg::$variant(value)
                }
                fn unwrap_as(self) -> Result<$ty, Self> {
                    match self {
                        $msg::$variant(value) => Ok(value),
                        #[allow(unreachable_patterns)]
                        other => Err(other),
                    }
                }
                fn view(&self) -> Option<&$ty> {
                    match self {
                        $msg::$variant(value) => Some(value),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
            }
        )+
    };
}
