//! The mechanisms, by Kafka's names.

use std::fmt;

use crate::SaslError;

/// A SCRAM mechanism as Kafka defines it (`ScramMechanism`): the hash, the type byte that
/// `UserScramCredentialRecord` and AlterUserScramCredentials carry, and the iteration bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    ScramSha256,
    ScramSha512,
}

impl ScramMechanism {
    /// Both, in type order.
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::ScramSha256, ScramMechanism::ScramSha512];

    /// The SASL name, `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub fn mechanism_name(self) -> &'static str {
        match self {
            ScramMechanism::ScramSha256 => "SCRAM-SHA-256",
            ScramMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism of a SASL name (exact and case-sensitive, as Kafka matches it).
    pub fn from_mechanism_name(name: &str) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.mechanism_name() == name)
    }

    /// The type byte: 1 for SHA-256, 2 for SHA-512.
    pub fn kafka_type(self) -> i8 {
        match self {
            ScramMechanism::ScramSha256 => 1,
            ScramMechanism::ScramSha512 => 2,
        }
    }

    /// The mechanism of a type byte.
    pub fn from_kafka_type(kafka_type: i8) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.kafka_type() == kafka_type)
    }

    /// The fewest iterations a credential may have: enforced when storing one and when a
    /// client authenticates with one.
    pub fn min_iterations(self) -> u32 {
        4096
    }

    /// The most iterations a stored credential may have (checked only when storing, as Kafka
    /// does).
    pub fn max_iterations(self) -> u32 {
        16384
    }

    /// The length of the hash, and so of the stored key, server key and proof.
    pub fn hash_len(self) -> usize {
        match self {
            ScramMechanism::ScramSha256 => 32,
            ScramMechanism::ScramSha512 => 64,
        }
    }
}

impl fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mechanism_name())
    }
}

/// A mechanism this crate serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SaslMechanism {
    Plain,
    Scram(ScramMechanism),
}

impl SaslMechanism {
    /// Kafka's name for PLAIN.
    pub const PLAIN_NAME: &'static str = "PLAIN";

    /// The mechanism of a SaslHandshake's name, matched exactly as Kafka matches
    /// `sasl.enabled.mechanisms`; any other name (GSSAPI, OAUTHBEARER, a lower-case spelling)
    /// is [`SaslError::UnsupportedSaslMechanism`].
    pub fn from_name(name: &str) -> Result<SaslMechanism, SaslError> {
        if name == Self::PLAIN_NAME {
            return Ok(SaslMechanism::Plain);
        }
        ScramMechanism::from_mechanism_name(name)
            .map(SaslMechanism::Scram)
            .ok_or_else(|| SaslError::UnsupportedSaslMechanism(name.to_string()))
    }

    /// The SASL name.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => Self::PLAIN_NAME,
            SaslMechanism::Scram(scram) => scram.mechanism_name(),
        }
    }
}

impl fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scram_mechanisms_have_kafkas_names_type_bytes_and_iteration_bounds() {
        let sha256 = ScramMechanism::ScramSha256;
        let sha512 = ScramMechanism::ScramSha512;
        assert_eq!(
            (sha256.mechanism_name(), sha256.kafka_type()),
            ("SCRAM-SHA-256", 1)
        );
        assert_eq!(
            (sha512.mechanism_name(), sha512.kafka_type()),
            ("SCRAM-SHA-512", 2)
        );
        for m in ScramMechanism::ALL {
            assert_eq!((m.min_iterations(), m.max_iterations()), (4096, 16384));
            assert_eq!(ScramMechanism::from_kafka_type(m.kafka_type()), Some(m));
            assert_eq!(
                ScramMechanism::from_mechanism_name(m.mechanism_name()),
                Some(m)
            );
        }
        assert_eq!(ScramMechanism::from_kafka_type(0), None);
        assert_eq!(ScramMechanism::from_kafka_type(3), None);
    }

    #[test]
    fn mechanism_names_match_exactly_and_case_sensitively() {
        assert_eq!(SaslMechanism::from_name("PLAIN"), Ok(SaslMechanism::Plain));
        assert_eq!(
            SaslMechanism::from_name("SCRAM-SHA-512"),
            Ok(SaslMechanism::Scram(ScramMechanism::ScramSha512))
        );
        for name in [
            "plain",
            "scram-sha-256",
            "GSSAPI",
            "OAUTHBEARER",
            "SCRAM-SHA-1",
            "",
        ] {
            assert_eq!(
                SaslMechanism::from_name(name),
                Err(SaslError::UnsupportedSaslMechanism(name.to_string()))
            );
        }
    }
}
