//! A streams member's process id, small.

/// A streams member's process id (record 19's `ProcessId`). Kafka Streams makes it a UUID's
/// text: kept as the UUID's 16 bytes when the text is exactly what they print as (lower case,
/// hyphenated), and as the text otherwise, so that a member does not hold 36 bytes of text in an
/// allocation of its own. Either way it stands for its text: two are equal when their texts are
/// (the 16-byte form is only ever made from its one printed form).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProcessId {
    Uuid([u8; 16]),
    Text(Box<str>),
}

impl Default for ProcessId {
    fn default() -> Self {
        ProcessId::Text(Box::default())
    }
}

impl ProcessId {
    pub fn new(text: &str) -> ProcessId {
        match uuid::Uuid::try_parse(text) {
            Ok(uuid) if Self::printed(uuid.as_bytes(), &mut [0; 36]) == text => {
                ProcessId::Uuid(uuid.into_bytes())
            }
            _ => ProcessId::Text(text.into()),
        }
    }

    /// Calls `f` with the text, without allocating.
    pub fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            ProcessId::Uuid(bytes) => f(Self::printed(bytes, &mut [0; 36])),
            ProcessId::Text(text) => f(text),
        }
    }

    fn printed<'b>(bytes: &[u8; 16], buffer: &'b mut [u8; 36]) -> &'b str {
        uuid::Uuid::from_bytes(*bytes)
            .hyphenated()
            .encode_lower(buffer)
    }
}

impl From<&str> for ProcessId {
    fn from(text: &str) -> Self {
        ProcessId::new(text)
    }
}

impl PartialEq<str> for ProcessId {
    fn eq(&self, text: &str) -> bool {
        self.with_text(|own| own == text)
    }
}

impl std::fmt::Display for ProcessId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with_text(|text| f.write_str(text))
    }
}

impl std::fmt::Debug for ProcessId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with_text(|text| text.fmt(f))
    }
}

#[cfg(test)]
mod tests {
    use super::ProcessId;

    #[test]
    fn a_process_id_reads_back_as_its_text_and_a_uuid_is_kept_as_its_bytes() {
        let uuid = "8f0c2a34-5b7e-4d1a-9c3f-0e2b6a7d9c11";
        assert!(matches!(ProcessId::new(uuid), ProcessId::Uuid(_)));
        for text in [
            uuid,
            // Not what the 16 bytes print as: kept as text, never normalised.
            "8F0C2A34-5B7E-4D1A-9C3F-0E2B6A7D9C11",
            "8f0c2a345b7e4d1a9c3f0e2b6a7d9c11",
            "{8f0c2a34-5b7e-4d1a-9c3f-0e2b6a7d9c11}",
            "app-process-1",
            "",
        ] {
            let id = ProcessId::new(text);
            assert_eq!(id.to_string(), text);
            assert!(id == *text, "{text}");
            assert_eq!(id, ProcessId::new(text));
            assert_ne!(id, ProcessId::new("other"), "{text}");
            if text != uuid {
                assert!(matches!(id, ProcessId::Text(_)), "{text}");
            }
        }
    }
}
