//! SCRAM's functions (RFC 5802 section 2.2) for each mechanism's hash, from the RustCrypto
//! crates.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

use crate::ScramMechanism;

/// HMAC(key, data).
pub(crate) fn hmac(mechanism: ScramMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    match mechanism {
        ScramMechanism::ScramSha256 => hmac_with::<Hmac<Sha256>>(key, data),
        ScramMechanism::ScramSha512 => hmac_with::<Hmac<Sha512>>(key, data),
    }
}

fn hmac_with<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length (a long one is hashed first), so this never fails.
    let Ok(mut mac) = <M as KeyInit>::new_from_slice(key) else {
        unreachable!("HMAC accepts keys of every length")
    };
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// H(data).
pub(crate) fn hash(mechanism: ScramMechanism, data: &[u8]) -> Vec<u8> {
    match mechanism {
        ScramMechanism::ScramSha256 => Sha256::digest(data).to_vec(),
        ScramMechanism::ScramSha512 => Sha512::digest(data).to_vec(),
    }
}

/// Hi(password, salt, iterations): PBKDF2 with the mechanism's HMAC, one hash-length block.
/// Zero iterations give what one does, as in Kafka's `ScramFormatter.hi`.
pub(crate) fn hi(
    mechanism: ScramMechanism,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
) -> Vec<u8> {
    let mut out = vec![0u8; mechanism.hash_len()];
    match mechanism {
        ScramMechanism::ScramSha256 => {
            pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out)
        }
        ScramMechanism::ScramSha512 => {
            pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out)
        }
    }
    out
}

/// `a XOR b` over the shorter length (callers check lengths first).
pub(crate) fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}
