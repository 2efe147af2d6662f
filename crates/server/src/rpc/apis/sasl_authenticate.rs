//! SaslAuthenticate (key 36), v0-2, on a connection that needs no authentication (a listener
//! without SASL) or has completed it. Before that, `crate::rpc::authentication` serves it.
//! Kafka answers ILLEGAL_SASL_STATE here: kcoord does not re-authenticate
//! (`connections.max.reauth.ms` 0, Kafka's default).

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::{serve, Listeners, Rpc};
use crate::state::RequestContext;

/// SaslAuthenticate as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::SaslAuthenticate, 0, 2)
    .served_on(Listeners::BrokerAndController)
    .local_in_gateway();

serve!(sync handle);

pub fn handle(
    _ctx: &RequestContext<'_>,
    _req: SaslAuthenticateRequest,
    _version: i16,
) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse {
        error_code: ErrorCode::ILLEGAL_SASL_STATE.code(),
        error_message: Some(
            "SaslAuthenticate request received after successful authentication".to_owned(),
        ),
        ..Default::default()
    }
}

/// The authorization matrix's rows of SaslAuthenticate ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get, on
/// broker and controller listeners alike.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    on_every_listener(
        row!(SaslAuthenticate 2 on Broker, SaslAuthenticateRequest::default(),
                needs [],
                SaslAuthenticateResponse => |r| code(r.error_code),
                allowed "ILLEGAL_SASL_STATE", denied "ILLEGAL_SASL_STATE"),
    )
}
