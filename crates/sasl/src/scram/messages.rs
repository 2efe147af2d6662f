//! SCRAM's messages (RFC 5802 section 7) as Kafka's `ScramMessages` reads and writes them:
//! ASCII only, gs2 flag `n` only (Kafka does no channel binding), the optional `m=` part
//! accepted and ignored, extensions `<letters>=<value>` after the nonce.

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::Engine;

use crate::error::escaped;
use crate::SaslError;

/// Base64 as `java.util.Base64.getDecoder()` reads it: padding required, and bits left over in
/// the last character ignored rather than refused.
const LENIENT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// `gs2-header [reserved-mext ","] username "," nonce ["," extensions]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientFirst {
    /// The gs2 header's `a=` value as sent (still escaped, as Kafka compares it), or "".
    pub authorization_id: String,
    /// The `n=` value as sent (escaped).
    pub sasl_name: String,
    /// The `n=` value unescaped: the user name (or the token id, with `tokenauth`).
    pub username: String,
    pub nonce: String,
    /// In the order sent; Kafka keeps them in a map, so a repeated name counts once, last
    /// value winning.
    pub extensions: Vec<(String, String)>,
}

impl ClientFirst {
    pub fn parse(bytes: &[u8]) -> Result<ClientFirst, SaslError> {
        let malformed = || SaslError::InvalidClientFirstMessage(escaped(bytes));
        let text = std::str::from_utf8(bytes).map_err(|_| malformed())?;
        let rest = text.strip_prefix("n,").ok_or_else(malformed)?;
        let (authorization_id, rest) = match rest.strip_prefix("a=") {
            Some(after) => {
                let (authorization_id, rest) = split_comma(after).ok_or_else(malformed)?;
                if !is_sasl_name(authorization_id) {
                    return Err(malformed());
                }
                (authorization_id, rest)
            }
            None => ("", rest.strip_prefix(',').ok_or_else(malformed)?),
        };
        let rest = match rest.strip_prefix("m=") {
            Some(after) => {
                let (reserved, rest) = split_comma(after).ok_or_else(malformed)?;
                if !is_value(reserved) {
                    return Err(malformed());
                }
                rest
            }
            None => rest,
        };
        let after_name = rest.strip_prefix("n=").ok_or_else(malformed)?;
        let (sasl_name, rest) = split_comma(after_name).ok_or_else(malformed)?;
        let after_nonce = rest.strip_prefix("r=").ok_or_else(malformed)?;
        let (nonce, extensions) = split_nonce(after_nonce).ok_or_else(malformed)?;
        if !is_sasl_name(sasl_name) {
            return Err(malformed());
        }
        Ok(ClientFirst {
            authorization_id: authorization_id.to_string(),
            sasl_name: sasl_name.to_string(),
            username: unescape_sasl_name(sasl_name),
            nonce: nonce.to_string(),
            extensions: parse_extensions(extensions).ok_or_else(malformed)?,
        })
    }

    /// client-first-message-bare as Kafka rebuilds it for the AuthMessage: `n=`, `r=` and the
    /// extensions, without the `m=` part. For every client that sends no `m=` (Kafka's and
    /// librdkafka's send none) this is the bare message as sent.
    pub fn bare(&self) -> String {
        let mut bare = format!("n={},r={}", self.sasl_name, self.nonce);
        for (name, value) in &self.extensions {
            bare.push_str(&format!(",{name}={value}"));
        }
        bare
    }

    /// Whether the client asked to authenticate with a delegation token: the last `tokenauth`
    /// extension reads `true` in any case (Java's `Boolean.parseBoolean`).
    pub fn token_authentication(&self) -> bool {
        self.extensions
            .iter()
            .rev()
            .find(|(name, _)| name == "tokenauth")
            .is_some_and(|(_, value)| value.eq_ignore_ascii_case("true"))
    }
}

/// `channel-binding "," nonce ["," extensions] "," proof`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientFinal {
    pub channel_binding: Vec<u8>,
    pub nonce: String,
    pub proof: Vec<u8>,
}

impl ClientFinal {
    pub fn parse(bytes: &[u8]) -> Result<ClientFinal, SaslError> {
        let malformed = || SaslError::InvalidClientFinalMessage(escaped(bytes));
        let text = std::str::from_utf8(bytes).map_err(|_| malformed())?;
        let after_binding = text.strip_prefix("c=").ok_or_else(malformed)?;
        let (channel_binding, rest) = split_comma(after_binding).ok_or_else(malformed)?;
        let after_nonce = rest.strip_prefix("r=").ok_or_else(malformed)?;
        let (nonce, tail) = split_nonce(after_nonce).ok_or_else(malformed)?;
        let (extensions, proof) = tail.rsplit_once(",p=").ok_or_else(malformed)?;
        // Extensions here are checked for form and then dropped, as Kafka drops them.
        parse_extensions(extensions).ok_or_else(malformed)?;
        Ok(ClientFinal {
            channel_binding: decode_base64(channel_binding).ok_or_else(malformed)?,
            nonce: nonce.to_string(),
            proof: decode_base64(proof).ok_or_else(malformed)?,
        })
    }

    /// client-final-message-without-proof as Kafka rebuilds it: the channel binding
    /// re-encoded and the nonce, without extensions.
    pub fn without_proof(&self) -> String {
        format!(
            "c={},r={}",
            STANDARD.encode(&self.channel_binding),
            self.nonce
        )
    }
}

/// `r=<client nonce><server nonce>,s=<salt>,i=<iterations>`.
pub(crate) fn server_first(nonce: &str, salt: &[u8], iterations: u32) -> String {
    format!("r={nonce},s={},i={iterations}", STANDARD.encode(salt))
}

/// `v=<server signature>`; Kafka's server never sends `e=`.
pub(crate) fn server_final(server_signature: &[u8]) -> String {
    format!("v={}", STANDARD.encode(server_signature))
}

/// `[reserved-mext ","] nonce "," salt "," iteration-count ["," extensions]`, read by a client
/// as Kafka's `ScramMessages.ServerFirstMessage` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerFirst {
    /// The client's nonce followed by the server's.
    pub nonce: String,
    pub salt: Vec<u8>,
    pub iterations: u32,
}

/// Why a server message was refused, before the caller adds which message it was.
pub(crate) struct MalformedServerMessage;

impl ServerFirst {
    pub fn parse(bytes: &[u8]) -> Result<ServerFirst, MalformedServerMessage> {
        let text = std::str::from_utf8(bytes).map_err(|_| MalformedServerMessage)?;
        let rest = skip_reserved(text).ok_or(MalformedServerMessage)?;
        let after_nonce = rest.strip_prefix("r=").ok_or(MalformedServerMessage)?;
        let (nonce, rest) = split_nonce(after_nonce).ok_or(MalformedServerMessage)?;
        let after_salt = rest.strip_prefix(",s=").ok_or(MalformedServerMessage)?;
        let (salt, rest) = split_comma(after_salt).ok_or(MalformedServerMessage)?;
        let after_iterations = rest.strip_prefix("i=").ok_or(MalformedServerMessage)?;
        let end = after_iterations
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after_iterations.len());
        let (iterations, extensions) = after_iterations.split_at(end);
        parse_extensions(extensions).ok_or(MalformedServerMessage)?;
        // Kafka refuses a count that is not a positive int (Integer.parseInt, then > 0).
        let iterations = iterations
            .parse::<i32>()
            .ok()
            .filter(|i| *i > 0)
            .ok_or(MalformedServerMessage)?;
        Ok(ServerFirst {
            nonce: nonce.to_string(),
            salt: decode_base64(salt).ok_or(MalformedServerMessage)?,
            iterations: iterations.unsigned_abs(),
        })
    }
}

/// `("e=" server-error-value | "v=" verifier) ["," extensions]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServerFinal {
    Error(String),
    Verifier(Vec<u8>),
}

impl ServerFinal {
    pub fn parse(bytes: &[u8]) -> Result<ServerFinal, MalformedServerMessage> {
        let text = std::str::from_utf8(bytes).map_err(|_| MalformedServerMessage)?;
        let text = skip_reserved(text).ok_or(MalformedServerMessage)?;
        let end = text.find(',').unwrap_or(text.len());
        let (part, extensions) = text.split_at(end);
        parse_extensions(extensions).ok_or(MalformedServerMessage)?;
        if let Some(error) = part.strip_prefix("e=") {
            return if is_value(error) {
                Ok(ServerFinal::Error(error.to_string()))
            } else {
                Err(MalformedServerMessage)
            };
        }
        let verifier = part.strip_prefix("v=").ok_or(MalformedServerMessage)?;
        decode_base64(verifier)
            .map(ServerFinal::Verifier)
            .ok_or(MalformedServerMessage)
    }
}

/// The text after an optional `m=<value>,` part.
fn skip_reserved(text: &str) -> Option<&str> {
    match text.strip_prefix("m=") {
        Some(after) => {
            let (reserved, rest) = split_comma(after)?;
            is_value(reserved).then_some(rest)
        }
        None => Some(text),
    }
}

/// RFC 5802's `saslname` for a user name: `,` as `=2C` and `=` as `=3D` (Kafka's
/// `ScramFormatter.saslName`).
pub(crate) fn escape_sasl_name(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

/// `value` and what follows the next comma; None when there is no comma.
fn split_comma(text: &str) -> Option<(&str, &str)> {
    text.split_once(',')
}

/// The nonce (printable ASCII but `,`, at least one character) and what follows it (empty or
/// starting with a comma).
fn split_nonce(text: &str) -> Option<(&str, &str)> {
    let end = text.find(',').unwrap_or(text.len());
    let (nonce, rest) = text.split_at(end);
    let printable = |c: char| ('\x21'..='\x7e').contains(&c) && c != ',';
    (!nonce.is_empty() && nonce.chars().all(printable)).then_some((nonce, rest))
}

/// `("," name "=" value)*` with name ASCII letters and value any ASCII but NUL and `,` (so it
/// may hold `=`); None if any part is malformed.
fn parse_extensions(text: &str) -> Option<Vec<(String, String)>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    let text = text.strip_prefix(',')?;
    text.split(',')
        .map(|extension| {
            let (name, value) = extension.split_once('=')?;
            let is_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphabetic());
            (is_name && is_value(value)).then(|| (name.to_string(), value.to_string()))
        })
        .collect()
}

/// RFC 5802's `value`: one or more ASCII characters but NUL and `,`.
fn is_value(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| ('\x01'..='\x7f').contains(&c) && c != ',')
}

/// RFC 5802's `saslname`: ASCII but NUL, `,` and `=`, where `=` appears only in `=2C` and `=3D`.
fn is_sasl_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'=' if matches!(bytes.get(i + 1..i + 3), Some(b"2C") | Some(b"3D")) => i += 3,
            b'=' | b',' | 0 | 0x80.. => return false,
            _ => i += 1,
        }
    }
    !bytes.is_empty()
}

/// `=2C` to `,` and `=3D` to `=`, for a name [`is_sasl_name`] accepted.
fn unescape_sasl_name(sasl_name: &str) -> String {
    sasl_name.replace("=2C", ",").replace("=3D", "=")
}

fn decode_base64(text: &str) -> Option<Vec<u8>> {
    LENIENT_BASE64.decode(text).ok()
}

#[cfg(test)]
mod tests {
    //! Every message accepted or refused below is accepted or refused alike by Kafka 4.4's
    //! `ScramMessages.ClientFirstMessage` / `ClientFinalMessage` (checked by running them).

    use super::*;

    fn first(text: &str) -> Result<ClientFirst, SaslError> {
        ClientFirst::parse(text.as_bytes())
    }

    fn last(text: &str) -> Result<ClientFinal, SaslError> {
        ClientFinal::parse(text.as_bytes())
    }

    #[test]
    fn a_plain_client_first_message_parses() {
        let message = first("n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
        assert_eq!(message.authorization_id, "");
        assert_eq!(message.username, "user");
        assert_eq!(message.nonce, "rOprNGfwEbeRWgbNEkqO");
        assert!(message.extensions.is_empty());
        assert_eq!(message.bare(), "n=user,r=rOprNGfwEbeRWgbNEkqO");
        assert!(!message.token_authentication());
    }

    #[test]
    fn authorization_id_reserved_part_and_extensions_are_read() {
        let message = first("n,a=bob,m=ignored,n=bob,r=x=y,tokenauth=TRUE,other=a=b").unwrap();
        assert_eq!(message.authorization_id, "bob");
        assert_eq!(message.nonce, "x=y");
        assert_eq!(
            message.extensions,
            vec![
                ("tokenauth".to_string(), "TRUE".to_string()),
                ("other".to_string(), "a=b".to_string())
            ]
        );
        assert!(message.token_authentication());
        // The `m=` part is not in the bare message Kafka signs.
        assert_eq!(message.bare(), "n=bob,r=x=y,tokenauth=TRUE,other=a=b");
    }

    #[test]
    fn the_last_tokenauth_extension_decides() {
        assert!(!first("n,,n=u,r=n,tokenauth=true,tokenauth=false")
            .unwrap()
            .token_authentication());
        assert!(!first("n,,n=u,r=n,tokenauth=yes")
            .unwrap()
            .token_authentication());
    }

    #[test]
    fn escaped_names_are_unescaped_and_the_sasl_name_kept_for_signing() {
        let message = first("n,,n=a=2Cb=3Dc=3D2C,r=n").unwrap();
        assert_eq!(message.username, "a,b=c=2C");
        assert_eq!(message.sasl_name, "a=2Cb=3Dc=3D2C");
        assert_eq!(message.bare(), "n=a=2Cb=3Dc=3D2C,r=n");
    }

    #[test]
    fn gs2_headers_other_than_n_are_refused() {
        for message in [
            "y,,n=user,r=abc",
            "p=tls-unique,,n=user,r=abc",
            "p=tls-server-end-point,,n=user,r=abc",
            "N,,n=user,r=abc",
            ",,n=user,r=abc",
            "n,n=user,r=abc",
            "n,a=,n=user,r=abc",
            "n,x=bob,n=user,r=abc",
            "n,a=b=b,n=user,r=abc",
            "nn=user,r=abc",
        ] {
            assert!(
                matches!(first(message), Err(SaslError::InvalidClientFirstMessage(_))),
                "{message}"
            );
        }
    }

    #[test]
    fn malformed_client_first_messages_are_refused() {
        for message in [
            "",
            "n,,",
            "n,,n=user",
            "n,,n=user,",
            "n,,n=user,r=",
            "n,,n=,r=abc",
            "n,,r=abc,n=user",
            "n,,n=us=er,r=abc",
            "n,,n=user=2c,r=abc",
            "n,,n=us\u{e9}r,r=abc",
            "n,,n=us\0er,r=abc",
            "n,,n=user,r=ab c",
            "n,,n=user,r=abc,",
            "n,,n=user,r=abc,ext",
            "n,,n=user,r=abc,=v",
            "n,,n=user,r=abc,e1=v",
            "n,,n=user,r=abc,e=",
            "n,,m=,n=user,r=abc",
            "n,,m=x",
        ] {
            assert!(
                matches!(first(message), Err(SaslError::InvalidClientFirstMessage(_))),
                "{message:?}"
            );
        }
        assert!(matches!(
            ClientFirst::parse(b"n,,n=\xff,r=abc"),
            Err(SaslError::InvalidClientFirstMessage(_))
        ));
    }

    #[test]
    fn a_refused_message_is_quoted_escaped_in_the_error() {
        assert_eq!(
            first("y,,n=a\nb,r=c").unwrap_err().to_string(),
            "Invalid SCRAM client first message format: y,,n=a\\nb,r=c"
        );
    }

    #[test]
    fn a_client_final_message_parses_and_rebuilds_without_proof() {
        let message = last("c=biws,r=abcdef,p=dGVzdA==").unwrap();
        assert_eq!(message.channel_binding, b"n,,");
        assert_eq!(message.nonce, "abcdef");
        assert_eq!(message.proof, b"test");
        assert_eq!(message.without_proof(), "c=biws,r=abcdef");
    }

    #[test]
    fn client_final_extensions_are_accepted_and_left_out_of_the_signed_text() {
        let message = last("c=biws,r=abc,p=x,ext=v,p=dGVzdA==").unwrap();
        assert_eq!(message.proof, b"test");
        assert_eq!(message.without_proof(), "c=biws,r=abc");
    }

    #[test]
    fn base64_with_stray_low_bits_is_read_as_java_reads_it_and_re_encoded() {
        // "dGVzdB==" and "dGVzdA==" differ only in bits that decoding drops (Java's
        // Base64.getDecoder() reads both as "test").
        let message = last("c=dGVzdB==,r=abc,p=").unwrap();
        assert_eq!(message.channel_binding, b"test");
        assert_eq!(message.without_proof(), "c=dGVzdA==,r=abc");
        assert!(message.proof.is_empty());
    }

    #[test]
    fn malformed_client_final_messages_are_refused() {
        for message in [
            "",
            "c=biws",
            "c=biws,r=abc",
            "c=biws,r=abc,p",
            "r=abc,c=biws,p=dGVzdA==",
            "c=biws,r=,p=dGVzdA==",
            "c=biw,r=abc,p=dGVzdA==",
            "c=biws,r=abc,p=dGVzdA",
            "c=biws,r=abc,p=dGVzdA==,",
            "c=biws,r=abc,p=dGV*dA==",
            "c=biws,r=abc,1=2,p=dGVzdA==",
            "c=biws,r=abc,p=dGVzdA==,x=y",
            "c=biws,r=a\u{e9},p=dGVzdA==",
        ] {
            assert!(
                matches!(last(message), Err(SaslError::InvalidClientFinalMessage(_))),
                "{message:?}"
            );
        }
    }

    #[test]
    fn server_first_and_final_messages_parse_as_kafkas_client_reads_them() {
        let first = ServerFirst::parse(b"m=r,r=abc+def,s=c2FsdA==,i=4096,ext=a=b").ok();
        assert_eq!(
            first,
            Some(ServerFirst {
                nonce: "abc+def".into(),
                salt: b"salt".to_vec(),
                iterations: 4096
            })
        );
        assert!(ServerFirst::parse(b"r=abc,s=c2FsdA==,i=4096x").is_err());
        assert_eq!(
            ServerFinal::parse(b"v=c2ln").ok(),
            Some(ServerFinal::Verifier(b"sig".to_vec()))
        );
        assert_eq!(
            ServerFinal::parse(b"e=other-error,x=1").ok(),
            Some(ServerFinal::Error("other-error".into()))
        );
        assert!(ServerFinal::parse(b"e=").is_err());
        assert!(ServerFinal::parse(b"v=c2ln,").is_err());
        assert_eq!(escape_sasl_name("a,b=c"), "a=2Cb=3Dc");
    }

    #[test]
    fn server_messages_have_kafkas_form() {
        assert_eq!(
            server_first("abc123", b"salt", 4096),
            "r=abc123,s=c2FsdA==,i=4096"
        );
        assert_eq!(server_final(b"sig"), "v=c2ln");
    }
}
