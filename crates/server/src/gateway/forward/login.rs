//! A client's SASL exchange relayed to the cluster (`gateway.authentication=upstream`): the
//! client's connection opens its upstream connection at the SaslHandshake, unauthenticated,
//! and each of the client's tokens goes to the cluster in a SaslAuthenticate of its own. Once
//! the cluster accepts, that upstream connection is the cluster's session of the client, and
//! every request the client's connection forwards goes on it.

use bytes::Bytes;
use kcoord_client::{ClientError, Connection as Upstream};
use kcoord_sasl::SaslMechanism;
use kcoord_wire::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
};
use kcoord_wire::{ErrorCode, Request};

use super::{Destination, Forwarder};

/// The cluster's side of one client's relayed exchange.
#[derive(Debug, Clone)]
pub struct UpstreamLogin {
    upstream: Upstream,
    address: String,
    authenticate_version: i16,
}

/// Why a relayed exchange could not start.
#[derive(Debug)]
pub enum LoginRefused {
    /// The cluster does not enable the mechanism; these are the ones it does.
    Mechanism(Vec<String>),
    /// No upstream broker could be reached, or it is no SASL listener (logged).
    Unreachable,
}

impl Forwarder {
    /// Opens this client connection's upstream connection and starts a `mechanism` exchange
    /// on it, which the client's tokens then continue ([`UpstreamLogin::authenticate`]).
    pub async fn login(&self, mechanism: SaslMechanism) -> Result<UpstreamLogin, LoginRefused> {
        let Destination::Broker(target) = self.destination else {
            return Err(LoginRefused::Unreachable);
        };
        let address = self
            .broker_address(target)
            .map_err(|()| LoginRefused::Unreachable)?;
        let login = match start(&address, self.gateway.client().clone(), mechanism).await {
            Ok(login) => login?,
            Err(e) => {
                self.gateway.log_failure(
                    &address,
                    "cannot relay a client's SASL exchange upstream; closing the client connection",
                    &e,
                );
                return Err(LoginRefused::Unreachable);
            }
        };
        // A session has one handshake, so the cell is empty here.
        let _ = self.upstream.set((address, login.upstream.clone()));
        Ok(login)
    }
}

/// Connects, learns the versions and sends the SaslHandshake: the cluster's refusal of the
/// mechanism is the inner error, a broken connection the outer.
async fn start(
    address: &str,
    config: kcoord_client::ClientConfig,
    mechanism: SaslMechanism,
) -> Result<Result<UpstreamLogin, LoginRefused>, ClientError> {
    let upstream = Upstream::connect_unauthenticated(address, config).await?;
    let handshake_version = upstream
        .negotiated_version::<SaslHandshakeRequest>()
        .await?;
    let authenticate_version = upstream
        .negotiated_version::<SaslAuthenticateRequest>()
        .await?;
    if handshake_version < 1 {
        // Version 0 passes tokens as raw frames, which no current Kafka listener expects.
        return Err(ClientError::InvalidArgument(format!(
            "the upstream broker at {address} offers no SaslHandshake v1: is it a SASL listener?"
        )));
    }
    let handshake = upstream
        .send(
            SaslHandshakeRequest {
                mechanism: mechanism.name().to_owned(),
                ..Default::default()
            },
            handshake_version,
        )
        .await?;
    match ErrorCode::from_code(handshake.error_code) {
        Some(ErrorCode::NONE) => Ok(Ok(UpstreamLogin {
            upstream,
            address: address.to_owned(),
            authenticate_version,
        })),
        Some(ErrorCode::UNSUPPORTED_SASL_MECHANISM) => {
            Ok(Err(LoginRefused::Mechanism(handshake.mechanisms)))
        }
        _ => Err(ClientError::Kafka {
            api: SaslHandshakeRequest::KEY,
            code: handshake.error_code,
            message: None,
        }),
    }
}

impl UpstreamLogin {
    /// Passes one of the client's tokens to the cluster; its answer says whether it accepted.
    pub async fn authenticate(
        &self,
        token: Bytes,
    ) -> Result<SaslAuthenticateResponse, ClientError> {
        self.upstream
            .send(
                SaslAuthenticateRequest {
                    auth_bytes: token,
                    ..Default::default()
                },
                self.authenticate_version,
            )
            .await
    }

    /// The upstream broker the exchange runs with.
    pub fn address(&self) -> &str {
        &self.address
    }
}
