//! SaslHandshake (key 17), v0-1, and SaslAuthenticate (key 36), v0-2, on a connection that
//! needs no authentication (a listener without SASL) or has completed it. Before that,
//! `crate::rpc::authentication` serves them. Kafka answers both ILLEGAL_SASL_STATE here: kcoord
//! does not re-authenticate (`connections.max.reauth.ms` 0, Kafka's default).

use kcoord_wire::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kcoord_wire::ErrorCode;

use crate::state::RequestContext;

pub fn handshake(
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

pub fn authenticate(
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
