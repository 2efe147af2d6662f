//! Random values in the shapes Kafka gives them, and the per-process secret.

use std::sync::OnceLock;

use rand::RngCore;

/// 130 bits, as Kafka's `ScramFormatter.secureRandomString` draws them.
const RANDOM_BITS_BYTES: usize = 17;

/// A random string as Kafka's `ScramFormatter.secureRandomString` makes one: a 130-bit number
/// from a CSPRNG written in base 36 (`0-9a-z`, no leading zeros, about 25 characters). Kafka
/// uses it for the server nonce and, as UTF-8 bytes, for the salts `kafka-configs` generates.
pub fn secure_random_string() -> String {
    let mut bytes = [0u8; RANDOM_BITS_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    base36_of_130_bits(bytes)
}

/// `bytes` read as a big-endian number with its top 6 bits cleared, in base 36.
pub(crate) fn base36_of_130_bits(mut bytes: [u8; RANDOM_BITS_BYTES]) -> String {
    bytes[0] &= 0x03;
    let mut digits = Vec::new();
    while bytes.iter().any(|&b| b != 0) {
        digits.push(divide_by_36(&mut bytes));
    }
    if digits.is_empty() {
        digits.push(0);
    }
    digits
        .iter()
        .rev()
        .map(|&d| char::from_digit(u32::from(d), 36).unwrap_or('0'))
        .collect()
}

/// Long division of a big-endian number in place; returns the remainder.
fn divide_by_36(number: &mut [u8]) -> u8 {
    let mut remainder: u16 = 0;
    for byte in number.iter_mut() {
        let current = (remainder << 8) | u16::from(*byte);
        *byte = (current / 36) as u8;
        remainder = current % 36;
    }
    remainder as u8
}

/// A random key made once per process, for the HMACs that derive unknown users' fake salts and
/// that fingerprint PLAIN passwords for comparison. It never leaves memory, so nobody outside
/// can compute what it derives; it changes at each start.
pub(crate) fn process_secret() -> &'static [u8; 32] {
    static SECRET: OnceLock<[u8; 32]> = OnceLock::new();
    SECRET.get_or_init(|| {
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        secret
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base36_renders_130_bit_numbers_as_javas_big_integer_does() {
        assert_eq!(base36_of_130_bits([0; 17]), "0");
        let mut one = [0u8; 17];
        one[16] = 1;
        assert_eq!(base36_of_130_bits(one), "1");
        let mut thirty_six = [0u8; 17];
        thirty_six[16] = 36;
        assert_eq!(base36_of_130_bits(thirty_six), "10");
        // 2^130 - 1 in base 36, as Java prints it:
        // BigInteger.TWO.pow(130).subtract(BigInteger.ONE).toString(36).
        assert_eq!(base36_of_130_bits([0xff; 17]), "1omfro7zwmumr3umxudzyj6scf");
    }

    #[test]
    fn random_strings_are_base36_within_130_bits_and_differ() {
        let a = secure_random_string();
        let b = secure_random_string();
        assert_ne!(a, b);
        for s in [&a, &b] {
            assert!(!s.is_empty() && s.len() <= 26, "{s}");
            assert!(s
                .chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()));
        }
    }

    #[test]
    fn the_process_secret_is_made_once() {
        assert_eq!(process_secret(), process_secret());
        assert_ne!(process_secret(), &[0u8; 32]);
    }
}
