//! One exchange of whichever mechanism the client's SaslHandshake chose.

use crate::{
    PlainAuthenticator, PlainServer, SaslError, SaslMechanism, ScramCredentialLookup, ScramServer,
    Step,
};

/// The server side of one SASL exchange, PLAIN or SCRAM, created once the handshake has named
/// the mechanism.
pub enum SaslServer<A, L> {
    Plain(PlainServer<A>),
    Scram(ScramServer<L>),
}

impl<A: PlainAuthenticator, L: ScramCredentialLookup> SaslServer<A, L> {
    /// The exchange for `mechanism`, with PLAIN's users and SCRAM's credential store (only
    /// the one the mechanism needs is kept).
    pub fn new(mechanism: SaslMechanism, plain_users: A, scram_credentials: L) -> SaslServer<A, L> {
        match mechanism {
            SaslMechanism::Plain => SaslServer::Plain(PlainServer::new(plain_users)),
            SaslMechanism::Scram(scram) => {
                SaslServer::Scram(ScramServer::new(scram, scram_credentials))
            }
        }
    }

    pub fn mechanism(&self) -> SaslMechanism {
        match self {
            SaslServer::Plain(_) => SaslMechanism::Plain,
            SaslServer::Scram(server) => SaslMechanism::Scram(server.mechanism()),
        }
    }

    pub fn step(&mut self, client_token: &[u8]) -> Result<Step, SaslError> {
        match self {
            SaslServer::Plain(server) => server.step(client_token),
            SaslServer::Scram(server) => server.step(client_token),
        }
    }

    pub fn is_complete(&self) -> bool {
        match self {
            SaslServer::Plain(server) => server.is_complete(),
            SaslServer::Scram(server) => server.is_complete(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PlainUsers, ScramCredentials, ScramMechanism};

    #[test]
    fn the_handshakes_mechanism_picks_the_exchange() {
        let mut users = PlainUsers::new();
        users.insert("alice", "pw");
        let credentials = ScramCredentials::new();

        let mut plain = SaslServer::new(SaslMechanism::Plain, &users, &credentials);
        assert_eq!(plain.mechanism(), SaslMechanism::Plain);
        assert!(matches!(
            plain.step(b"\0alice\0pw"),
            Ok(Step::Complete { .. })
        ));
        assert!(plain.is_complete());

        let sha512 = SaslMechanism::Scram(ScramMechanism::ScramSha512);
        let mut scram = SaslServer::new(sha512, &users, &credentials);
        assert_eq!(scram.mechanism(), sha512);
        // SCRAM does not take PLAIN's message, and has not completed.
        assert!(matches!(
            scram.step(b"\0alice\0pw"),
            Err(SaslError::InvalidClientFirstMessage(_))
        ));
        assert!(!scram.is_complete());
    }
}
