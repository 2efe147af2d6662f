//! SaslHandshake (key 17), v0-1, on a connection that needs no authentication (a listener
//! without SASL) or has completed it. Before that, `crate::rpc::authentication` serves it.
//! Kafka answers ILLEGAL_SASL_STATE here: kcoord does not re-authenticate
//! (`connections.max.reauth.ms` 0, Kafka's default).

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{SaslHandshakeRequest, SaslHandshakeResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::{serve, Listeners, Rpc};
use crate::state::RequestContext;

/// SaslHandshake as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::SaslHandshake, 0, 1)
    .served_on(Listeners::BrokerAndController)
    .local_in_gateway();

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

/// The authorization matrix's rows of SaslHandshake ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get, on
/// broker and controller listeners alike.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    // Asks nothing: once authenticated (or on a listener without SASL) both are
    // ILLEGAL_SASL_STATE.
    on_every_listener(row!(SaslHandshake 1 on Broker, SaslHandshakeRequest {
                    mechanism: "PLAIN".into(),
                    ..Default::default()
                },
                needs [],
                SaslHandshakeResponse => |r| code(r.error_code),
                allowed "ILLEGAL_SASL_STATE", denied "ILLEGAL_SASL_STATE"))
}
