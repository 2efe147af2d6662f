//! SCRAM-SHA-256 and SCRAM-SHA-512 as Kafka implements them.

mod credential;
mod crypto;
mod lookup;
mod messages;
mod server;

pub use credential::{salted_password, ScramCredential};
pub use lookup::{DelegationTokenCredential, ScramCredentialLookup, ScramCredentials};
pub use server::ScramServer;
