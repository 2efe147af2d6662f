//! What every room leans on and that leans on nothing but the configuration: the wall clock,
//! the blocking pool, the log writer and its rate limits, the shutdown signal, and the count of
//! live heap bytes.
pub mod blocking;
pub mod clock;
pub mod heap;
pub mod logging;
pub mod priority;
pub mod shutdown;
