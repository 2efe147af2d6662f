//! What every room leans on and that leans on nothing but the configuration: the wall clock,
//! the blocking pool, the log writer and its rate limits, and the shutdown signal.
pub mod blocking;
pub mod clock;
pub mod logging;
pub mod shutdown;
