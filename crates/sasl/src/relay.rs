//! An exchange whose credentials another server checks: the tokens pass between the client and
//! that server unchanged, and this side only follows them, to know when the exchange has
//! completed and who the client proved to be. A Kafka gateway uses it to let the cluster behind
//! it authenticate its clients, so it never needs (and, with SCRAM, never learns) a password.

use crate::plain::split_plain_message;
use crate::scram::ClientFirst;
use crate::{Authenticated, SaslError, SaslMechanism, Step};

/// Where a relayed exchange is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RelayState {
    /// The client's next token is due.
    ClientToken,
    /// The client's token went on; the other server's answer is due.
    ServerToken,
    Complete,
    Failed,
}

/// One relayed exchange, PLAIN or SCRAM: PLAIN completes when the other server accepts the
/// client's one token, SCRAM when it accepts the second (the client-final message).
#[derive(Debug)]
pub struct RelayedExchange {
    mechanism: SaslMechanism,
    state: RelayState,
    /// The client's tokens passed on so far.
    client_tokens: u8,
    /// Read from the client's first token.
    username: Option<String>,
}

impl RelayedExchange {
    pub fn new(mechanism: SaslMechanism) -> RelayedExchange {
        RelayedExchange {
            mechanism,
            state: RelayState::ClientToken,
            client_tokens: 0,
            username: None,
        }
    }

    pub fn mechanism(&self) -> SaslMechanism {
        self.mechanism
    }

    /// Takes the client's next token before it goes on. The first names the user: a token
    /// whose grammar does not name one is refused here, with the error Kafka gives for it, and
    /// not passed on. A SCRAM delegation token (`tokenauth`) is refused: its owner, who the
    /// client would be, is known only to the other server.
    pub fn client_token(&mut self, token: &[u8]) -> Result<(), SaslError> {
        if self.state != RelayState::ClientToken {
            return Err(self.fail_unexpected());
        }
        if self.client_tokens == 0 {
            match self.username_in(token) {
                Ok(username) => self.username = Some(username),
                Err(e) => {
                    self.state = RelayState::Failed;
                    return Err(e);
                }
            }
        }
        self.client_tokens += 1;
        self.state = RelayState::ServerToken;
        Ok(())
    }

    /// Takes the other server's accepting answer to the last client token: the token to pass
    /// back, and whether the exchange has completed.
    pub fn server_token(&mut self, token: Vec<u8>) -> Result<Step, SaslError> {
        if self.state != RelayState::ServerToken {
            return Err(self.fail_unexpected());
        }
        let rounds = match self.mechanism {
            SaslMechanism::Plain => 1,
            SaslMechanism::Scram(_) => 2,
        };
        if self.client_tokens < rounds {
            self.state = RelayState::ClientToken;
            return Ok(Step::Challenge(token));
        }
        self.state = RelayState::Complete;
        Ok(Step::Complete {
            token,
            authenticated: Authenticated {
                authorization_id: self.username.take().unwrap_or_default(),
                token_authenticated: false,
                token_expiry_timestamp_ms: None,
            },
        })
    }

    /// The other server refused: nothing more is relayed.
    pub fn refused(&mut self) {
        self.state = RelayState::Failed;
    }

    fn username_in(&self, token: &[u8]) -> Result<String, SaslError> {
        match self.mechanism {
            SaslMechanism::Plain => {
                let message = String::from_utf8_lossy(token);
                let [_, username, _] = split_plain_message(&message)?;
                if username.is_empty() {
                    return Err(SaslError::UsernameNotSpecified);
                }
                Ok(username.to_owned())
            }
            SaslMechanism::Scram(_) => {
                let first = ClientFirst::parse(token)?;
                if first.token_authentication() {
                    return Err(SaslError::TokenAuthenticationNotRelayed);
                }
                Ok(first.username)
            }
        }
    }

    fn fail_unexpected(&mut self) -> SaslError {
        let state = match self.state {
            RelayState::Complete => "COMPLETE",
            _ => "FAILED",
        };
        self.state = RelayState::Failed;
        SaslError::unexpected_challenge(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScramMechanism;

    fn completed(step: Step) -> (Vec<u8>, String) {
        match step {
            Step::Complete {
                token,
                authenticated,
            } => (token, authenticated.authorization_id),
            Step::Challenge(_) => panic!("not complete"),
        }
    }

    #[test]
    fn plain_completes_when_the_server_accepts_its_one_token() {
        let mut relay = RelayedExchange::new(SaslMechanism::Plain);
        relay.client_token(b"\0alice\0secret").unwrap();
        let (token, who) = completed(relay.server_token(Vec::new()).unwrap());
        assert_eq!((token, who.as_str()), (Vec::new(), "alice"));
        assert!(matches!(
            relay.client_token(b"\0alice\0again"),
            Err(SaslError::IllegalSaslState(_))
        ));
    }

    #[test]
    fn scram_completes_at_the_server_final_message_as_the_user_the_first_named() {
        let mut relay = RelayedExchange::new(SaslMechanism::Scram(ScramMechanism::ScramSha256));
        relay.client_token(b"n,,n=bob=2Cjr,r=abc").unwrap();
        // A second client token before the server answered is out of place.
        let mut early = RelayedExchange::new(SaslMechanism::Scram(ScramMechanism::ScramSha256));
        early.client_token(b"n,,n=bob,r=abc").unwrap();
        assert!(early.client_token(b"c=biws,r=abcdef,p=x").is_err());

        let first = relay
            .server_token(b"r=abcdef,s=c2FsdA==,i=4096".to_vec())
            .unwrap();
        assert_eq!(
            first,
            Step::Challenge(b"r=abcdef,s=c2FsdA==,i=4096".to_vec())
        );
        relay.client_token(b"c=biws,r=abcdef,p=cHJvb2Y=").unwrap();
        let (token, who) = completed(relay.server_token(b"v=c2ln".to_vec()).unwrap());
        assert_eq!((token.as_slice(), who.as_str()), (&b"v=c2ln"[..], "bob,jr"));
    }

    #[test]
    fn a_first_token_naming_nobody_is_refused_before_it_goes_on() {
        let mut plain = RelayedExchange::new(SaslMechanism::Plain);
        assert_eq!(
            plain.client_token(b"\0\0secret"),
            Err(SaslError::UsernameNotSpecified)
        );
        assert!(plain.server_token(Vec::new()).is_err());
        let mut count = RelayedExchange::new(SaslMechanism::Plain);
        assert_eq!(
            count.client_token(b"alice"),
            Err(SaslError::PlainTokenCount(1))
        );
        let mut scram = RelayedExchange::new(SaslMechanism::Scram(ScramMechanism::ScramSha512));
        assert!(matches!(
            scram.client_token(b"y,,n=bob,r=abc"),
            Err(SaslError::InvalidClientFirstMessage(_))
        ));
        let mut token = RelayedExchange::new(SaslMechanism::Scram(ScramMechanism::ScramSha512));
        assert_eq!(
            token.client_token(b"n,,n=id,r=abc,tokenauth=true"),
            Err(SaslError::TokenAuthenticationNotRelayed)
        );
    }

    #[test]
    fn nothing_is_relayed_after_a_refusal() {
        let mut relay = RelayedExchange::new(SaslMechanism::Plain);
        relay.client_token(b"\0alice\0wrong").unwrap();
        relay.refused();
        assert!(relay.server_token(Vec::new()).is_err());
        assert!(relay.client_token(b"\0alice\0secret").is_err());
    }
}
