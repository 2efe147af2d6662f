//! SCRAM-SHA-256 and SCRAM-SHA-512 as Kafka implements them, server and client.

mod client;
mod credential;
mod crypto;
mod lookup;
mod messages;
mod server;

pub use client::ScramClient;
pub use credential::{salted_password, ScramCredential};
pub use lookup::{DelegationTokenCredential, ScramCredentialLookup, ScramCredentials};
pub(crate) use messages::ClientFirst;
pub use server::ScramServer;
