//! The `ssl.*` keys of an SSL listener are read and checked when the configuration is: every PEM
//! combination Kafka refuses is a configuration error with Kafka's message (naming the key to
//! change, prefixed when the prefixed key was written), as are unreadable stores, a wrong key
//! password, a key that does not match its certificate, and what kcoord does not do (JKS,
//! PKCS12, client authentication without a truststore).

mod tls_support;

use kcoord_server::tls::{ClientAuth, TlsVersion};
use kcoord_server::{Config, ConfigError};
use tls_support::{encrypted_key_pem, Pki};

const BASE: &str = "node.id=1\nlisteners=SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n";

fn parse(extra: &str) -> Result<Config, ConfigError> {
    Config::parse("ssl.properties", &format!("{BASE}{extra}"))
}

/// The key and message of a configuration error.
fn error(extra: &str) -> (String, String) {
    match parse(extra) {
        Ok(_) => panic!("accepted:\n{extra}"),
        Err(ConfigError::Invalid { key, message, .. })
        | Err(ConfigError::InvalidDefault { key, message, .. }) => (key, message),
        Err(other) => panic!("unexpected error {other}"),
    }
}

/// Stores for one server, written as files, and as inline values.
struct Stores {
    pki: Pki,
    /// Key and certificate in one file.
    keystore: String,
    /// The same, inline: the text of a properties value written on one line.
    key_inline: String,
    chain_inline: String,
    truststore: String,
    ca_inline: String,
}

/// PEM text as a one-line properties value (Kafka's docs write it with `\` continuations,
/// which the properties reader joins the same way).
fn one_line(pem: &str) -> String {
    pem.trim_end().replace('\n', " ")
}

fn stores() -> Stores {
    let pki = Pki::new("kcoord test CA");
    let server = pki.server();
    let keystore = pki.write("server.pem", &server.keystore_pem());
    let truststore = pki.write("ca.pem", &pki.ca.cert_pem);
    Stores {
        keystore: keystore.display().to_string(),
        key_inline: one_line(&server.key_pem),
        chain_inline: one_line(&server.cert_pem),
        truststore: truststore.display().to_string(),
        ca_inline: one_line(&pki.ca.cert_pem),
        pki,
    }
}

#[test]
fn a_pem_keystore_file_or_inline_pem_makes_an_ssl_listener() {
    let s = stores();
    let c = parse(&format!(
        "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
        s.keystore
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.ssl.len(), 1);
    assert_eq!(c.ssl[0].name, "SSL");
    assert_eq!(c.ssl[0].client_auth, ClientAuth::None);
    assert_eq!(c.ssl[0].protocols, [TlsVersion::Tls12, TlsVersion::Tls13]);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let c = parse(&format!(
        "ssl.keystore.type=PEM\nssl.keystore.key={}\nssl.keystore.certificate.chain={}\n\
         ssl.truststore.type=PEM\nssl.truststore.certificates={}\nssl.client.auth=required\n\
         ssl.enabled.protocols=TLSv1.3\nssl.endpoint.identification.algorithm=\n",
        s.key_inline, s.chain_inline, s.ca_inline
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.ssl[0].client_auth, ClientAuth::Required);
    assert_eq!(c.ssl[0].protocols, [TlsVersion::Tls13]);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

#[test]
fn kafkas_key_store_combinations_are_refused_with_kafkas_messages() {
    let s = stores();
    let (ks, key, chain) = (&s.keystore, &s.key_inline, &s.chain_inline);
    for (extra, expected_key, message) in [
        (
            format!("ssl.keystore.key={key}\nssl.keystore.certificate.chain={chain}\n"),
            "ssl.keystore.key",
            "SSL private key can be specified only for PEM, but key store type is JKS.".to_owned(),
        ),
        (
            format!("ssl.keystore.type=PEM\nssl.keystore.key={key}\n"),
            "ssl.keystore.key",
            "SSL private key is specified, but certificate chain is not specified.".to_owned(),
        ),
        (
            format!(
                "ssl.keystore.type=PEM\nssl.keystore.key={key}\nssl.keystore.certificate.chain={chain}\nssl.keystore.location={ks}\n"
            ),
            "ssl.keystore.location",
            "Both SSL key store location and separate private key are specified.".to_owned(),
        ),
        (
            format!(
                "ssl.keystore.type=PEM\nssl.keystore.key={key}\nssl.keystore.certificate.chain={chain}\nssl.keystore.password=x\n"
            ),
            "ssl.keystore.password",
            "SSL key store password cannot be specified with PEM format, only key password may be specified.".to_owned(),
        ),
        (
            format!("ssl.keystore.type=PEM\nssl.keystore.certificate.chain={chain}\n"),
            "ssl.keystore.certificate.chain",
            "SSL certificate chain is specified, but private key is not specified".to_owned(),
        ),
        (
            format!("ssl.keystore.type=PEM\nssl.keystore.location={ks}\nssl.keystore.password=x\n"),
            "ssl.keystore.password",
            "SSL key store password cannot be specified with PEM format, only key password may be specified".to_owned(),
        ),
        (
            "ssl.keystore.type=PEM\nssl.keystore.password=x\n".to_owned(),
            "ssl.keystore.password",
            "SSL key store is not specified, but key store password is specified.".to_owned(),
        ),
    ] {
        let (key, got) = error(&extra);
        assert_eq!((key.as_str(), got.as_str()), (expected_key, message.as_str()), "{extra}");
    }
}

#[test]
fn kafkas_trust_store_combinations_are_refused_with_kafkas_messages() {
    let s = stores();
    let ok_keystore = format!(
        "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
        s.keystore
    );
    let (ts, ca) = (&s.truststore, &s.ca_inline);
    for (extra, expected_key, message) in [
        (
            format!("ssl.truststore.certificates={ca}\n"),
            "ssl.truststore.certificates",
            "SSL trust store certs can be specified only for PEM, but trust store type is JKS.",
        ),
        (
            format!("ssl.truststore.type=PEM\nssl.truststore.certificates={ca}\nssl.truststore.location={ts}\n"),
            "ssl.truststore.location",
            "Both SSL trust store location and separate trust certificates are specified.",
        ),
        (
            format!("ssl.truststore.type=PEM\nssl.truststore.certificates={ca}\nssl.truststore.password=x\n"),
            "ssl.truststore.password",
            "SSL trust store password cannot be specified for PEM format.",
        ),
        (
            format!("ssl.truststore.type=PEM\nssl.truststore.location={ts}\nssl.truststore.password=x\n"),
            "ssl.truststore.password",
            "SSL trust store password cannot be specified for PEM format.",
        ),
        (
            "ssl.truststore.password=x\n".to_owned(),
            "ssl.truststore.password",
            "SSL trust store is not specified, but trust store password is specified.",
        ),
    ] {
        let (key, got) = error(&format!("{ok_keystore}{extra}"));
        assert_eq!((key.as_str(), got.as_str()), (expected_key, message), "{extra}");
    }
}

#[test]
fn pem_parse_errors_carry_kafkas_messages() {
    let s = stores();
    let server = s.pki.server();
    let cert_only = s.pki.write("cert-only.pem", &server.cert_pem);
    let key_only = s.pki.write("key-only.pem", &server.key_pem);
    let two_keys = s.pki.write(
        "two-keys.pem",
        &format!("{}{}{}", server.key_pem, server.key_pem, server.cert_pem),
    );
    let pkcs1 = s.pki.write(
        "pkcs1.pem",
        &format!(
            "-----BEGIN RSA PRIVATE KEY-----\nMAMCAQA=\n-----END RSA PRIVATE KEY-----\n{}",
            server.cert_pem
        ),
    );
    let pem = "ssl.keystore.type=PEM\nssl.keystore.location=";
    for (path, tail) in [
        (
            &cert_only,
            "Invalid PEM keystore configs: No matching PRIVATE KEY entries in PEM file",
        ),
        (
            &key_only,
            "Invalid PEM keystore configs: No matching CERTIFICATE entries in PEM file",
        ),
        (
            &two_keys,
            "Invalid PEM keystore configs: Expected one private key, but found 2",
        ),
        (
            &pkcs1,
            "Invalid PEM keystore configs: Private key could not be loaded",
        ),
    ] {
        let (key, message) = error(&format!("{pem}{}\n", path.display()));
        assert_eq!(key, "ssl.keystore.location");
        let prefix = format!("Failed to load PEM SSL keystore {}: {tail}", path.display());
        assert!(message.starts_with(&prefix), "{message}\nexpected {prefix}");
    }
    // Not a regular file: an error, not a read that never ends.
    let (key, message) = error(&format!("{pem}/dev/zero\n"));
    assert_eq!(key, "ssl.keystore.location");
    assert_eq!(
        message,
        "Failed to load PEM SSL keystore /dev/zero: not a regular file"
    );
    let (key, message) = error(&format!("{pem}/nonexistent/kcoord.pem\n"));
    assert_eq!(key, "ssl.keystore.location");
    assert!(
        message.starts_with("Failed to load PEM SSL keystore /nonexistent/kcoord.pem: "),
        "{message}"
    );
    // A truststore without certificates: Kafka's own message, unwrapped.
    let (key, message) = error(&format!(
        "{pem}{}\nssl.truststore.type=PEM\nssl.truststore.location={}\n",
        s.keystore,
        key_only.display()
    ));
    assert_eq!(key, "ssl.truststore.location");
    assert_eq!(
        message,
        format!(
            "Failed to load PEM SSL keystore {}: No matching CERTIFICATE entries in PEM file",
            key_only.display()
        )
    );
}

#[test]
fn an_encrypted_key_needs_the_right_ssl_key_password() {
    let s = stores();
    let server = s.pki.server();
    let encrypted = s.pki.write(
        "encrypted.pem",
        &format!(
            "{}{}",
            encrypted_key_pem(&server.key_der, "right"),
            server.cert_pem
        ),
    );
    let base = format!(
        "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
        encrypted.display()
    );
    // Trimmed, as Kafka's ConfigDef trims it.
    parse(&format!("{base}ssl.key.password=right  \n")).unwrap_or_else(|e| panic!("{e}"));
    let (key, message) = error(&format!("{base}ssl.key.password=wrong\n"));
    assert_eq!(key, "ssl.key.password");
    assert!(
        message.contains("could not be decrypted with ssl.key.password"),
        "{message}"
    );
    let (key, message) = error(&base);
    assert_eq!(key, "ssl.keystore.location");
    assert!(
        message.contains("Private key could not be loaded"),
        "{message}"
    );
    assert!(message.contains("set ssl.key.password"), "{message}");
    // A password for a key that is not encrypted.
    let (key, message) = error(&format!(
        "ssl.keystore.type=PEM\nssl.keystore.location={}\nssl.key.password=x\n",
        s.keystore
    ));
    assert_eq!(key, "ssl.key.password");
    assert!(message.contains("not an encrypted PKCS#8 key"), "{message}");
}

#[test]
fn what_kcoord_does_not_do_is_a_clear_configuration_error() {
    let s = stores();
    let pem = format!(
        "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
        s.keystore
    );
    // JKS and PKCS12 stores.
    for store_type in ["JKS", "PKCS12"] {
        let (key, message) = error(&format!(
            "ssl.keystore.type={store_type}\nssl.keystore.location=/x.jks\nssl.keystore.password=p\n"
        ));
        assert_eq!(key, "ssl.keystore.type");
        assert!(
            message.contains("kcoord reads PEM key stores only"),
            "{message}"
        );
        let (key, message) = error(&format!(
            "{pem}ssl.truststore.type={store_type}\nssl.truststore.location=/x.jks\n"
        ));
        assert_eq!(key, "ssl.truststore.type");
        assert!(
            message.contains("kcoord reads PEM trust stores only"),
            "{message}"
        );
    }
    // The default type is Kafka's JKS too.
    let (_, message) = error("ssl.keystore.location=/x.jks\nssl.keystore.password=p\n");
    assert!(
        message.contains("but ssl.keystore.type is JKS"),
        "{message}"
    );
    // No key store at all.
    let (_, message) = error("");
    assert!(
        message.contains("listener SSL uses SSL but has no key store"),
        "{message}"
    );
    // Client authentication without a truststore.
    for auth in ["required", "requested"] {
        let (key, message) = error(&format!("{pem}ssl.client.auth={auth}\n"));
        assert_eq!(key, "ssl.client.auth");
        assert!(message.contains("needs a truststore"), "{message}");
    }
    // A key that is not the certificate's.
    let other = s.pki.server();
    let mismatched = s.pki.write(
        "mismatched.pem",
        &format!("{}{}", other.key_pem, s.pki.server().cert_pem),
    );
    let (key, message) = error(&format!(
        "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
        mismatched.display()
    ));
    assert_eq!(key, "ssl.keystore.location");
    assert!(
        message.contains("does not match the certificate"),
        "{message}"
    );
    // A SASL_SSL listener needs a supported mechanism: Kafka's default, GSSAPI, is not one.
    let (_, message) = error("listeners=SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n");
    assert!(
        message.contains("GSSAPI (Kerberos), Kafka's default, is not supported"),
        "{message}"
    );
}

#[test]
fn client_auth_protocols_and_rules_are_validated() {
    let s = stores();
    let pem = format!(
        "ssl.keystore.type=PEM\nssl.keystore.location={}\nssl.truststore.type=PEM\nssl.truststore.location={}\n",
        s.keystore, s.truststore
    );
    // Kafka's validator is case-sensitive; the unprefixed key is checked even without an SSL
    // listener.
    for extra in [
        format!("{pem}ssl.client.auth=REQUIRED\n"),
        "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\nssl.client.auth=yes\n"
            .to_owned(),
    ] {
        let (key, message) = error(&extra);
        assert_eq!(key, "ssl.client.auth");
        assert_eq!(message, "String must be one of: required, requested, none");
    }
    // The error names the file, the line and the key, as every config error does.
    let e =
        parse("listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\nssl.client.auth=yes\n")
            .unwrap_err();
    assert_eq!(
        e.to_string(),
        "ssl.properties:4: ssl.client.auth: String must be one of: required, requested, none"
    );
    let (key, message) = error(&format!("{pem}ssl.enabled.protocols=TLSv1.2,TLSv1.4\n"));
    assert_eq!(key, "ssl.enabled.protocols");
    assert!(
        message.starts_with("Unsupported protocol: TLSv1.4"),
        "{message}"
    );
    let (_, message) = error(&format!("{pem}ssl.enabled.protocols=TLSv1.1,TLSv1\n"));
    assert!(
        message.contains("kcoord speaks TLSv1.2 and TLSv1.3"),
        "{message}"
    );
    // The JDK's disabled versions are left out quietly, as the JDK leaves them out.
    let c = parse(&format!("{pem}ssl.enabled.protocols=TLSv1.2,TLSv1.1\n")).unwrap();
    assert_eq!(c.ssl[0].protocols, [TlsVersion::Tls12]);
    let (key, message) = error(&format!(
        "{pem}ssl.principal.mapping.rules=RULE:^CN=x$/y/Q\n"
    ));
    assert_eq!(key, "ssl.principal.mapping.rules");
    assert!(
        message.starts_with("Invalid rule: `RULE:^CN=x$/y/Q`"),
        "{message}"
    );
}

#[test]
fn prefixed_keys_win_and_errors_name_the_key_written() {
    let s = stores();
    // The prefixed location wins over a broken unprefixed one.
    let c = parse(&format!(
        "ssl.keystore.type=PEM\nssl.keystore.location=/nonexistent.pem\n\
         listener.name.ssl.ssl.keystore.location={}\n",
        s.keystore
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.ssl[0].client_auth, ClientAuth::None);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    // An error in a prefixed key names it.
    let (key, _) = error(&format!(
        "ssl.keystore.type=PEM\nssl.keystore.location={}\nlisteners=SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         listener.name.ssl.ssl.client.auth=sometimes\n",
        s.keystore
    ));
    assert_eq!(key, "listener.name.ssl.ssl.client.auth");
    // The unprefixed key applies where no prefixed one is written: here to both listeners.
    let c = parse(&format!(
        "listeners=SSL://127.0.0.1:0,OTHER://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         listener.security.protocol.map=SSL:SSL,OTHER:SSL,CONTROLLER:PLAINTEXT\n\
         ssl.keystore.type=PEM\nssl.keystore.location={}\nssl.truststore.type=PEM\n\
         ssl.truststore.location={}\nssl.client.auth=requested\n\
         listener.name.other.ssl.client.auth=required\n",
        s.keystore, s.truststore
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let auth: Vec<_> = c
        .ssl
        .iter()
        .map(|l| (l.name.as_str(), l.client_auth))
        .collect();
    assert_eq!(
        auth,
        [
            ("SSL", ClientAuth::Requested),
            ("OTHER", ClientAuth::Required)
        ]
    );
}
