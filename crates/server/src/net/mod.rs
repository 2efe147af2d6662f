//! Sockets: one accept loop per listener, one task per connection.

pub(crate) mod acceptor;
pub(crate) mod activity;
pub(crate) mod connection;
pub(crate) mod limiter;
pub(crate) mod tls;
