//! Who is asking: the request context every plugin operation receives (Kafka's
//! `AuthorizableRequestContext`).
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestContext {
    /// The authenticated principal, e.g. `User:ANONYMOUS`.
    pub principal: String,
    pub client_id: String,
    pub client_address: IpAddr,
    pub listener_name: String,
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
}

impl RequestContext {
    /// A context for calls that do not come from a client request (tests, maintenance).
    pub fn internal(api_key: i16, api_version: i16) -> Self {
        RequestContext {
            principal: "User:ANONYMOUS".into(),
            client_id: String::new(),
            client_address: IpAddr::from([127, 0, 0, 1]),
            listener_name: String::new(),
            api_key,
            api_version,
            correlation_id: 0,
        }
    }
}
