//! SaslHandshake (key 17), v0-1, on a connection that needs no authentication (a listener
//! without SASL) or has completed it. Before that, `crate::rpc::authentication` serves it.
//! Kafka answers ILLEGAL_SASL_STATE here: kcoord does not re-authenticate
//! (`connections.max.reauth.ms` 0, Kafka's default).

use kcoord_wire::messages::{SaslHandshakeRequest, SaslHandshakeResponse};
use kcoord_wire::ErrorCode;

use crate::state::RequestContext;
use kcoord_wire::api::ApiKey;
use crate::rpc::{serve, Listeners, Rpc};

/// SaslHandshake as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::SaslHandshake, 0, 1)
    .served_on(Listeners::BrokerAndController);

serve!(sync handle);

pub fn handle(
    _ctx: &RequestContext<'_>,
    _req: SaslHandshakeRequest,
    _version: i16,
) -> SaslHandshakeResponse {
    SaslHandshakeResponse {
        error_code: ErrorCode::ILLEGAL_SASL_STATE.code(),
        mechanisms: Vec::new(),
        ..Default::default()
    }
}
