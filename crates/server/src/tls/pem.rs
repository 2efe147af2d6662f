//! PEM stores as Kafka reads them (`DefaultSslEngineFactory.PemStore`, docs/kafka-security-facts.md
//! §4.3): the blocks are found with Kafka's own `PemParser` pattern, so text outside blocks,
//! `Proc-Type:`-style headers and blocks written on one line (a properties value continued with
//! `\`) are read as Kafka reads them; certificates are every CERTIFICATE block (the first is the
//! leaf), and there must be exactly one PKCS#8 `PRIVATE KEY` block, encrypted (PBES2) when
//! `ssl.key.password` is set.

use std::sync::LazyLock;

use base64ct::{Base64, Base64Unpadded, Encoding};
use pkcs8::der::Decode;
use regex::Regex;
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};

/// Java's `\s` (without UNICODE_CHARACTER_CLASS) and `.` (without DOTALL), which the regex crate
/// spells differently (its `\s` and `.` are wider).
pub(crate) const JAVA_SPACE: &str = r"[ \t\n\x0B\x0C\r]";
pub(crate) const JAVA_DOT: &str = r"[^\n\r\u{85}\u{2028}\u{2029}]";

/// Kafka's `PemParser(name)` pattern, with group 1 the base64 body.
fn pem_pattern(name: &str) -> Regex {
    let s = JAVA_SPACE;
    let dot = JAVA_DOT;
    let name = name.replace(' ', &format!("{s}+"));
    let begin_or_end = |word: &str| format!("-+{word}{s}*{dot}*{name}[^-]*-+{s}+");
    let encoding_params = format!(r"{s}*[^\r\n]*:[^\r\n]*[\r\n]+");
    let base64 = format!("([a-zA-Z0-9/+={s}]*)");
    let pattern = format!(
        "{}(?:{encoding_params})*{base64}{}",
        begin_or_end("BEGIN"),
        begin_or_end("END")
    );
    // The pattern is fixed text: it compiles, or no PEM store could ever be read.
    Regex::new(&pattern).unwrap_or_else(|e| panic!("PEM pattern {pattern}: {e}"))
}

static CERTIFICATE: LazyLock<Regex> = LazyLock::new(|| pem_pattern("CERTIFICATE"));
static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| pem_pattern("PRIVATE KEY"));

/// rsaEncryption and id-ecPublicKey: the key algorithms Kafka tries that TLS can use here.
const RSA: pkcs8::ObjectIdentifier = pkcs8::ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const EC: pkcs8::ObjectIdentifier = pkcs8::ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const DSA: pkcs8::ObjectIdentifier = pkcs8::ObjectIdentifier::new_unwrap("1.2.840.10040.4.1");

/// Why a PEM text could not be read. The messages are Kafka's where Kafka has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PemError {
    #[error("No matching {0} entries in PEM file")]
    NoEntries(&'static str),
    #[error("Expected one private key, but found {0}")]
    KeyCount(usize),
    #[error("Illegal base64 in a {0} entry")]
    Base64(&'static str),
    #[error("Invalid certificate (entry {index}): {reason}")]
    Certificate { index: usize, reason: String },
    #[error("Private key could not be loaded: {0}")]
    Key(String),
    /// Kafka would load a DSA key, but no TLS version rustls speaks can use one.
    #[error("Private key could not be loaded: DSA keys cannot serve TLS 1.2 or 1.3 here; use an RSA or EC key")]
    DsaKey,
    #[error("the private key could not be decrypted with ssl.key.password: {0}")]
    Decrypt(String),
}

/// Every base64 body the pattern finds, decoded as Java's basic decoder does (padding optional).
fn entries(pattern: &Regex, name: &'static str, pem: &str) -> Result<Vec<Vec<u8>>, PemError> {
    // Kafka appends a newline so that the last one may be left out of a value.
    let text = format!("{pem}\n");
    let mut out = Vec::new();
    for caps in pattern.captures_iter(&text) {
        let body: String = caps
            .get(1)
            .map_or("", |m| m.as_str())
            .chars()
            .filter(|c| !c.is_ascii_whitespace() && *c != '\x0B')
            .collect();
        let decoded = if body.contains('=') {
            Base64::decode_vec(&body)
        } else {
            Base64Unpadded::decode_vec(&body)
        };
        out.push(decoded.map_err(|_| PemError::Base64(name))?);
    }
    if out.is_empty() {
        return Err(PemError::NoEntries(name));
    }
    Ok(out)
}

/// Most PBKDF2 iterations run to decrypt a key: OpenSSL writes 2,048, OWASP recommends 600,000.
const MAX_PBKDF2_ITERATIONS: u32 = 10_000_000;
/// Most scrypt work (128 x r x N x p bytes' worth) run to decrypt a key: OpenSSL 3's defaults
/// (N = 2^14 or 2^16, r = 8, p = 1) are far below it.
const MAX_SCRYPT_WORK: u128 = 1 << 30;

/// Refuses key derivation parameters that would take minutes or gigabytes, before running
/// them: the file is the operator's, but a typo should not hang the start.
fn check_cost(scheme: &pkcs5::EncryptionScheme) -> Result<(), PemError> {
    use pkcs5::pbes2::Kdf;
    let pkcs5::EncryptionScheme::Pbes2(params) = scheme else {
        return Ok(());
    };
    match &params.kdf {
        Kdf::Pbkdf2(k) if k.iteration_count > MAX_PBKDF2_ITERATIONS => {
            Err(PemError::Decrypt(format!(
                "{} PBKDF2 iterations is more than the {MAX_PBKDF2_ITERATIONS} kcoord runs",
                k.iteration_count
            )))
        }
        Kdf::Scrypt(k)
            if 128
                * u128::from(k.block_size)
                * u128::from(k.cost_parameter)
                * u128::from(k.parallelization)
                > MAX_SCRYPT_WORK =>
        {
            Err(PemError::Decrypt(format!(
                "scrypt N={} r={} p={} is more work than kcoord runs",
                k.cost_parameter, k.block_size, k.parallelization
            )))
        }
        _ => Ok(()),
    }
}

/// Every CERTIFICATE block, in order, each checked to be an X.509 certificate.
pub fn certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let entries = entries(&CERTIFICATE, "CERTIFICATE", pem)?;
    entries
        .into_iter()
        .enumerate()
        .map(|(index, der)| {
            x509_cert::Certificate::from_der(&der).map_err(|e| PemError::Certificate {
                index: index + 1,
                reason: e.to_string(),
            })?;
            Ok(CertificateDer::from(der))
        })
        .collect()
}

/// The one private key block as PKCS#8 DER: taken as it is without a password, decrypted from
/// an `EncryptedPrivateKeyInfo` with one, then checked to be an RSA or EC key (Kafka tries RSA,
/// DSA and EC).
pub fn private_key(
    pem: &str,
    password: Option<&str>,
) -> Result<PrivatePkcs8KeyDer<'static>, PemError> {
    let mut keys = entries(&PRIVATE_KEY, "PRIVATE KEY", pem)?;
    if keys.len() != 1 {
        return Err(PemError::KeyCount(keys.len()));
    }
    let bytes = keys.remove(0);
    let der = match password {
        None => bytes,
        Some(password) => {
            let info = pkcs8::EncryptedPrivateKeyInfoRef::from_der(&bytes).map_err(|e| {
                PemError::Decrypt(format!(
                    "not an encrypted PKCS#8 key (BEGIN ENCRYPTED PRIVATE KEY): {e}"
                ))
            })?;
            check_cost(&info.encryption_algorithm)?;
            let document = info
                .decrypt(password.as_bytes())
                .map_err(|e| PemError::Decrypt(e.to_string()))?;
            document.as_bytes().to_vec()
        }
    };
    let info = pkcs8::PrivateKeyInfoRef::from_der(&der).map_err(|e| {
        let hint =
            if password.is_none() && pkcs8::EncryptedPrivateKeyInfoRef::from_der(&der).is_ok() {
                " (the key is encrypted: set ssl.key.password)".to_owned()
            } else {
                format!(" (not a PKCS#8 key: {e})")
            };
        PemError::Key(format!("unreadable key{hint}"))
    })?;
    match info.algorithm.oid {
        RSA | EC => Ok(PrivatePkcs8KeyDer::from(der)),
        DSA => Err(PemError::DsaKey),
        other => Err(PemError::Key(format!(
            "key algorithm {other} is not RSA or EC"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(label: &str, der: &[u8]) -> String {
        let body = Base64::encode_string(der);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect();
        format!(
            "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
            lines.join("\n")
        )
    }

    #[test]
    fn blocks_are_found_as_kafkas_pattern_finds_them() {
        let text = format!(
            "Bag Attributes\n  friendlyName: x\n{}junk between\n{}",
            block("CERTIFICATE", b"first"),
            block("CERTIFICATE", b"second")
        );
        let found = entries(&CERTIFICATE, "CERTIFICATE", &text).unwrap();
        assert_eq!(found, vec![b"first".to_vec(), b"second".to_vec()]);
        // One line, as a properties value continued with `\` becomes; no final newline.
        let one_line = block("CERTIFICATE", b"abc").replace('\n', " ");
        assert_eq!(
            entries(&CERTIFICATE, "CERTIFICATE", one_line.trim_end()).unwrap(),
            vec![b"abc".to_vec()]
        );
        // Headers such as Proc-Type are skipped; padding is optional, as in Java.
        let headers = "-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: x\n\nYWJj\n-----END PRIVATE KEY-----";
        assert_eq!(
            entries(&PRIVATE_KEY, "PRIVATE KEY", headers).unwrap(),
            vec![b"abc".to_vec()]
        );
        assert_eq!(
            entries(
                &PRIVATE_KEY,
                "PRIVATE KEY",
                "-----BEGIN ENCRYPTED PRIVATE KEY-----\nYWI\n-----END ENCRYPTED PRIVATE KEY-----"
            )
            .unwrap(),
            vec![b"ab".to_vec()]
        );
    }

    #[test]
    fn kafkas_messages_for_missing_and_extra_entries() {
        assert_eq!(
            certificates("nothing here").unwrap_err().to_string(),
            "No matching CERTIFICATE entries in PEM file"
        );
        assert_eq!(
            private_key(&block("CERTIFICATE", b"x"), None)
                .unwrap_err()
                .to_string(),
            "No matching PRIVATE KEY entries in PEM file"
        );
        let two = format!(
            "{}{}",
            block("PRIVATE KEY", b"a"),
            block("PRIVATE KEY", b"b")
        );
        assert_eq!(
            private_key(&two, None).unwrap_err().to_string(),
            "Expected one private key, but found 2"
        );
        // PKCS#1 matches the pattern but is not PKCS#8.
        assert!(matches!(
            private_key(&block("RSA PRIVATE KEY", b"\x30\x03\x02\x01\x00"), None),
            Err(PemError::Key(_))
        ));
        assert!(matches!(
            certificates(&block("CERTIFICATE", b"not der")),
            Err(PemError::Certificate { index: 1, .. })
        ));
    }

    #[test]
    fn costly_key_derivation_is_refused_before_it_runs() {
        let scheme = |iterations| {
            pkcs5::EncryptionScheme::Pbes2(
                pkcs5::pbes2::Parameters::generate_pbkdf2_sha256_aes256cbc(
                    iterations,
                    b"0123456789abcdef",
                    [0; 16],
                )
                .unwrap(),
            )
        };
        assert_eq!(check_cost(&scheme(2048)), Ok(()));
        assert!(matches!(
            check_cost(&scheme(MAX_PBKDF2_ITERATIONS + 1)),
            Err(PemError::Decrypt(m)) if m.contains("PBKDF2 iterations")
        ));
    }
}
