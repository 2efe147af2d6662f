//! The `ssl.*` keys of SSL and SASL_SSL listeners, read as Kafka reads them (docs/kafka-security-facts.md
//! §4.3, §4.4): each key may be given for one listener with the prefix
//! `listener.name.<listener lowercased>.`, which wins over the unprefixed key; the key store and
//! trust store combinations are checked in Kafka's order with Kafka's messages; and the stores
//! are read, decrypted and turned into a rustls server here, so that a bad file, key or password
//! is a configuration error before anything is bound (config/README.md, "TLS").
//!
//! kcoord reads PEM stores only: a JKS or PKCS12 store is refused with a message saying so.

use std::sync::Arc;

use super::listeners::{ListenerConfig, SecurityProtocol};
use super::{ConfigError, Reader};
use crate::tls::pem::{self, PemError};
use crate::tls::{ClientAuth, PrincipalMapper, ServerError, ServerStores, TlsVersion};

const KEYSTORE_TYPE: &str = "ssl.keystore.type";
const KEYSTORE_LOCATION: &str = "ssl.keystore.location";
const KEYSTORE_PASSWORD: &str = "ssl.keystore.password";
const KEY_PASSWORD: &str = "ssl.key.password";
const KEYSTORE_KEY: &str = "ssl.keystore.key";
const KEYSTORE_CHAIN: &str = "ssl.keystore.certificate.chain";
const TRUSTSTORE_TYPE: &str = "ssl.truststore.type";
const TRUSTSTORE_LOCATION: &str = "ssl.truststore.location";
const TRUSTSTORE_PASSWORD: &str = "ssl.truststore.password";
const TRUSTSTORE_CERTIFICATES: &str = "ssl.truststore.certificates";
const CLIENT_AUTH: &str = "ssl.client.auth";
const MAPPING_RULES: &str = "ssl.principal.mapping.rules";
const ENABLED_PROTOCOLS: &str = "ssl.enabled.protocols";
/// Applied by Kafka in client mode only; a listener (the server side) ignores it.
const ENDPOINT_IDENTIFICATION: &str = "ssl.endpoint.identification.algorithm";

/// Every key this module reads, unprefixed.
pub const KEYS: [&str; 14] = [
    KEYSTORE_TYPE,
    KEYSTORE_LOCATION,
    KEYSTORE_PASSWORD,
    KEY_PASSWORD,
    KEYSTORE_KEY,
    KEYSTORE_CHAIN,
    TRUSTSTORE_TYPE,
    TRUSTSTORE_LOCATION,
    TRUSTSTORE_PASSWORD,
    TRUSTSTORE_CERTIFICATES,
    CLIENT_AUTH,
    MAPPING_RULES,
    ENABLED_PROTOCOLS,
    ENDPOINT_IDENTIFICATION,
];

/// Kafka's default store type; only `PEM` is read here.
const DEFAULT_STORE_TYPE: &str = "JKS";
const PEM_TYPE: &str = "PEM";

/// An SSL listener's TLS settings, stores loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct SslListener {
    /// Upper-case, as in `listeners`.
    pub name: String,
    pub client_auth: ClientAuth,
    pub protocols: Vec<TlsVersion>,
    pub principal_mapper: PrincipalMapper,
    pub server: ServerTls,
}

/// The rustls server built from the stores. Two are equal only when they are the same one.
#[derive(Debug, Clone)]
pub struct ServerTls(pub Arc<rustls::ServerConfig>);

impl PartialEq for ServerTls {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

pub(super) fn read(
    r: &Reader<'_>,
    listeners: &[ListenerConfig],
) -> Result<Vec<SslListener>, ConfigError> {
    // The unprefixed keys are Kafka's broker keys whether or not a listener uses them: known
    // (no "unknown key" warning), and `ssl.client.auth` validated as Kafka's ConfigDef does.
    for key in KEYS {
        r.is_set(key);
    }
    r.get(CLIENT_AUTH, ClientAuth::None, ClientAuth::parse)?;
    listeners
        .iter()
        .filter(|l| {
            matches!(
                l.security_protocol,
                SecurityProtocol::Ssl | SecurityProtocol::SaslSsl
            )
        })
        .map(|l| listener(r, l))
        .collect()
}

/// One listener's keys: the prefixed key when written, else the unprefixed one.
struct Keys<'r, 'a> {
    r: &'r Reader<'a>,
    prefix: String,
}

/// A key's value and the key it was written under.
struct Value {
    key: String,
    value: String,
}

impl Keys<'_, '_> {
    /// Blank counts as unset.
    fn get(&self, key: &str) -> Option<Value> {
        let prefixed = format!("{}{key}", self.prefix);
        [prefixed, key.to_owned()].into_iter().find_map(|k| {
            let value = self.r.entry(&k)?.value.clone();
            (!value.trim().is_empty()).then_some(Value { key: k, value })
        })
    }

    /// An error about `value`'s key, or about the unprefixed `key` when no value was written.
    fn error(&self, value: Option<&Value>, key: &str, message: impl Into<String>) -> ConfigError {
        self.r
            .error(value.map_or(key, |v| v.key.as_str()), message.into())
    }
}

fn listener(r: &Reader<'_>, l: &ListenerConfig) -> Result<SslListener, ConfigError> {
    let keys = Keys {
        r,
        prefix: format!("listener.name.{}.", l.name.to_ascii_lowercase()),
    };
    // On SASL_SSL, Kafka applies `ssl.client.auth` only when it is given for the listener: SASL
    // names the principal there (`ChannelBuilders.create`).
    let client_auth_value = keys
        .get(CLIENT_AUTH)
        .filter(|v| l.security_protocol == SecurityProtocol::Ssl || v.key != CLIENT_AUTH);
    let client_auth = match &client_auth_value {
        Some(v) => ClientAuth::parse(&v.value).map_err(|m| keys.error(Some(v), CLIENT_AUTH, m))?,
        None => ClientAuth::None,
    };
    let protocols = match keys.get(ENABLED_PROTOCOLS) {
        Some(v) => protocols(&v.value).map_err(|m| keys.error(Some(&v), ENABLED_PROTOCOLS, m))?,
        None => vec![TlsVersion::Tls12, TlsVersion::Tls13],
    };
    let principal_mapper = match keys.get(MAPPING_RULES) {
        Some(v) => {
            PrincipalMapper::parse(&v.value).map_err(|m| keys.error(Some(&v), MAPPING_RULES, m))?
        }
        None => PrincipalMapper::default(),
    };
    let _ = keys.get(ENDPOINT_IDENTIFICATION);
    let keystore = keystore(&keys)?.ok_or_else(|| {
        keys.error(
            None,
            KEYSTORE_LOCATION,
            format!(
                "listener {} uses SSL but has no key store: set ssl.keystore.type=PEM and \
                 ssl.keystore.location (or ssl.keystore.key and ssl.keystore.certificate.chain), \
                 unprefixed or with the prefix {}",
                l.name, keys.prefix
            ),
        )
    })?;
    let (trusted, trusted_key) = match truststore(&keys)? {
        Some((certificates, key)) => (Some(certificates), Some(key)),
        None => (None, None),
    };
    if client_auth != ClientAuth::None && trusted.is_none() {
        return Err(keys.error(
            client_auth_value.as_ref(),
            CLIENT_AUTH,
            ServerError::NoTruststore(client_auth.as_str()).to_string(),
        ));
    }
    let Keystore { chain, key, blame } = keystore;
    let stores = ServerStores {
        chain,
        key,
        trusted,
    };
    let server = crate::tls::server_config(stores, client_auth, &protocols).map_err(|e| {
        let key = match (&e, trusted_key) {
            (ServerError::Truststore(_), Some(key)) => key,
            _ => blame.key.clone(),
        };
        r.error(&key, e.to_string())
    })?;
    Ok(SslListener {
        name: l.name.clone(),
        client_auth,
        protocols,
        principal_mapper,
        server: ServerTls(server),
    })
}

/// `ssl.enabled.protocols`: TLSv1.2 and TLSv1.3 are spoken; the older names the JDK knows are
/// accepted and left out, as the JDK's `jdk.tls.disabledAlgorithms` leaves them out.
fn protocols(raw: &str) -> Result<Vec<TlsVersion>, String> {
    let mut out = Vec::new();
    for item in super::values::list(raw)? {
        let version = match item.as_str() {
            "TLSv1.3" => TlsVersion::Tls13,
            "TLSv1.2" => TlsVersion::Tls12,
            "TLSv1.1" | "TLSv1" | "SSLv3" | "SSLv2Hello" => continue,
            other => {
                return Err(format!(
                    "Unsupported protocol: {other} (kcoord speaks TLSv1.2 and TLSv1.3)"
                ))
            }
        };
        if !out.contains(&version) {
            out.push(version);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "none of {raw} can be used: kcoord speaks TLSv1.2 and TLSv1.3"
        ));
    }
    Ok(out)
}

struct Keystore {
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivatePkcs8KeyDer<'static>,
    /// The key to blame when the key and chain do not make a server.
    blame: Value,
}

fn store_type(value: &Option<Value>) -> &str {
    value
        .as_ref()
        .map_or(DEFAULT_STORE_TYPE, |v| v.value.trim())
}

fn pem_only(kind: &str, type_key: &str, store_type: &str) -> String {
    format!(
        "kcoord reads PEM {kind} stores only, but {type_key} is {store_type}: convert the store \
         to PEM and set {type_key}=PEM"
    )
}

/// Kafka's `createKeystore`, in its order.
fn keystore(keys: &Keys<'_, '_>) -> Result<Option<Keystore>, ConfigError> {
    let store_type_value = keys.get(KEYSTORE_TYPE);
    let kind = store_type(&store_type_value);
    let location = keys.get(KEYSTORE_LOCATION);
    let password = keys.get(KEYSTORE_PASSWORD);
    let key_password = keys.get(KEY_PASSWORD);
    let private_key = keys.get(KEYSTORE_KEY);
    let chain = keys.get(KEYSTORE_CHAIN);
    if let Some(key) = private_key {
        if kind != PEM_TYPE {
            let blamed = store_type_value.as_ref().unwrap_or(&key);
            return Err(keys.error(
                Some(blamed),
                KEYSTORE_TYPE,
                format!(
                    "SSL private key can be specified only for PEM, but key store type is {kind}."
                ),
            ));
        }
        let Some(chain) = chain else {
            return Err(keys.error(
                Some(&key),
                KEYSTORE_KEY,
                "SSL private key is specified, but certificate chain is not specified.",
            ));
        };
        if let Some(location) = &location {
            return Err(keys.error(
                Some(location),
                KEYSTORE_LOCATION,
                "Both SSL key store location and separate private key are specified.",
            ));
        }
        if let Some(password) = &password {
            return Err(keys.error(
                Some(password),
                KEYSTORE_PASSWORD,
                "SSL key store password cannot be specified with PEM format, only key password may be specified.",
            ));
        }
        return pem_key_and_chain(keys, key, chain, key_password.as_ref()).map(Some);
    }
    if let Some(chain) = chain {
        return Err(keys.error(
            Some(&chain),
            KEYSTORE_CHAIN,
            "SSL certificate chain is specified, but private key is not specified",
        ));
    }
    match (kind == PEM_TYPE, location, password) {
        (true, Some(_), Some(password)) => Err(keys.error(
            Some(&password),
            KEYSTORE_PASSWORD,
            "SSL key store password cannot be specified with PEM format, only key password may be specified",
        )),
        (true, Some(location), None) => {
            pem_keystore_file(keys, location, key_password.as_ref()).map(Some)
        }
        (_, None, Some(password)) => Err(keys.error(
            Some(&password),
            KEYSTORE_PASSWORD,
            "SSL key store is not specified, but key store password is specified.",
        )),
        (false, Some(location), _) => {
            let blamed = store_type_value.as_ref().unwrap_or(&location);
            Err(keys.error(Some(blamed), KEYSTORE_TYPE, pem_only("key", KEYSTORE_TYPE, kind)))
        }
        (_, None, None) => Ok(None),
    }
}

/// A key store written in the configuration: `ssl.keystore.key`, decrypted with
/// `ssl.key.password`, and `ssl.keystore.certificate.chain`.
fn pem_key_and_chain(
    keys: &Keys<'_, '_>,
    key: Value,
    chain: Value,
    key_password: Option<&Value>,
) -> Result<Keystore, ConfigError> {
    let certificates = pem::certificates(&chain.value).map_err(|e| {
        keys.error(
            Some(&chain),
            KEYSTORE_CHAIN,
            format!("Invalid PEM keystore configs: {e}"),
        )
    })?;
    let private = pem::private_key(&key.value, password_text(key_password)).map_err(|e| {
        keys.r.error(
            &blame_for(&e, &key, key_password),
            format!("Invalid PEM keystore configs: {e}"),
        )
    })?;
    Ok(Keystore {
        chain: certificates,
        key: private,
        blame: key,
    })
}

/// A PEM key store file at `ssl.keystore.location`, its key decrypted with `ssl.key.password`.
fn pem_keystore_file(
    keys: &Keys<'_, '_>,
    location: Value,
    key_password: Option<&Value>,
) -> Result<Keystore, ConfigError> {
    let path = location.value.trim();
    let failed = |message: String| format!("Failed to load PEM SSL keystore {path}: {message}");
    let text =
        read_file(path).map_err(|e| keys.error(Some(&location), KEYSTORE_LOCATION, failed(e)))?;
    // Kafka reads the key and the chain from the same text.
    let private = pem::private_key(&text, password_text(key_password)).map_err(|e| {
        keys.r.error(
            &blame_for(&e, &location, key_password),
            failed(format!("Invalid PEM keystore configs: {e}")),
        )
    })?;
    let certificates = pem::certificates(&text).map_err(|e| {
        keys.error(
            Some(&location),
            KEYSTORE_LOCATION,
            failed(format!("Invalid PEM keystore configs: {e}")),
        )
    })?;
    Ok(Keystore {
        chain: certificates,
        key: private,
        blame: location,
    })
}

/// `ssl.key.password` as the key is decrypted with it: Kafka's ConfigDef trims passwords as it
/// trims every string.
fn password_text(key_password: Option<&Value>) -> Option<&str> {
    key_password.map(|v| v.value.trim())
}

/// The key to blame when a private key does not load from `text`: a decryption error is the
/// password's fault; anything else the text's.
fn blame_for(e: &PemError, text: &Value, key_password: Option<&Value>) -> String {
    match (e, key_password) {
        (PemError::Decrypt(_), Some(p)) => p.key.clone(),
        _ => text.key.clone(),
    }
}

/// The trusted certificates and the key they came from. Kafka's `createTruststore`, in its
/// order.
fn truststore(
    keys: &Keys<'_, '_>,
) -> Result<Option<(Vec<rustls::pki_types::CertificateDer<'static>>, String)>, ConfigError> {
    let store_type_value = keys.get(TRUSTSTORE_TYPE);
    let kind = store_type(&store_type_value);
    let location = keys.get(TRUSTSTORE_LOCATION);
    let password = keys.get(TRUSTSTORE_PASSWORD);
    // Kafka passes on its own "no entries" message and wraps anything else.
    let message = |e: PemError| match e {
        PemError::NoEntries(_) => e.to_string(),
        other => format!("Invalid PEM truststore configs: {other}"),
    };
    if let Some(certificates) = keys.get(TRUSTSTORE_CERTIFICATES) {
        if kind != PEM_TYPE {
            let blamed = store_type_value.as_ref().unwrap_or(&certificates);
            return Err(keys.error(
                Some(blamed),
                TRUSTSTORE_TYPE,
                format!("SSL trust store certs can be specified only for PEM, but trust store type is {kind}."),
            ));
        }
        if let Some(location) = &location {
            return Err(keys.error(
                Some(location),
                TRUSTSTORE_LOCATION,
                "Both SSL trust store location and separate trust certificates are specified.",
            ));
        }
        if let Some(password) = &password {
            return Err(keys.error(
                Some(password),
                TRUSTSTORE_PASSWORD,
                "SSL trust store password cannot be specified for PEM format.",
            ));
        }
        let trusted = pem::certificates(&certificates.value)
            .map_err(|e| keys.error(Some(&certificates), TRUSTSTORE_CERTIFICATES, message(e)))?;
        return Ok(Some((trusted, certificates.key)));
    }
    match (kind == PEM_TYPE, location, password) {
        (true, Some(_), Some(password)) => Err(keys.error(
            Some(&password),
            TRUSTSTORE_PASSWORD,
            "SSL trust store password cannot be specified for PEM format.",
        )),
        (true, Some(location), None) => {
            let path = location.value.trim();
            let failed =
                |message: String| format!("Failed to load PEM SSL keystore {path}: {message}");
            let text = read_file(path)
                .map_err(|e| keys.error(Some(&location), TRUSTSTORE_LOCATION, failed(e)))?;
            let trusted = pem::certificates(&text).map_err(|e| {
                keys.error(Some(&location), TRUSTSTORE_LOCATION, failed(message(e)))
            })?;
            Ok(Some((trusted, location.key)))
        }
        (_, None, Some(password)) => Err(keys.error(
            Some(&password),
            TRUSTSTORE_PASSWORD,
            "SSL trust store is not specified, but trust store password is specified.",
        )),
        (false, Some(location), _) => {
            let blamed = store_type_value.as_ref().unwrap_or(&location);
            Err(keys.error(
                Some(blamed),
                TRUSTSTORE_TYPE,
                pem_only("trust", TRUSTSTORE_TYPE, kind),
            ))
        }
        (_, None, None) => Ok(None),
    }
}

/// Largest store file read: a CA bundle is a few hundred KiB.
const MAX_STORE_BYTES: u64 = 16 * 1024 * 1024;

/// A store file as text: UTF-8, or ISO-8859-1 when it is not (PEM is ASCII either way). Only a
/// regular file, and only so much of it, so that a path such as `/dev/zero` or a FIFO is an
/// error rather than a hang.
fn read_file(path: &str) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let metadata = file.metadata().map_err(|e| e.to_string())?;
    if !metadata.is_file() {
        return Err("not a regular file".to_owned());
    }
    let mut bytes = Vec::new();
    file.take(MAX_STORE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_STORE_BYTES {
        return Err(format!(
            "larger than {} MiB: not a PEM store",
            MAX_STORE_BYTES >> 20
        ));
    }
    Ok(super::properties::decode_file_bytes(&bytes))
}
