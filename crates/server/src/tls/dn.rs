//! A certificate's subject as Kafka sees it: Java's `X500Principal.getName()`, the RFC 2253 form
//! the JDK writes (docs/kafka-security-facts.md §4.1), which `ssl.principal.mapping.rules` match
//! against and which becomes the principal's name.
//!
//! The JDK's rules, followed here: RDNs most specific first (the reverse of the encoding),
//! joined by `,` without spaces; the values of a multi-valued RDN joined by `+` in encoded order;
//! keywords for CN, C, L, ST, O, OU, STREET, DC and UID only, any other attribute as its dotted
//! OID; a value of a string type (PrintableString, TeletexString, IA5String, GeneralString,
//! BMPString, UTF8String) written as text with `, = + < > # ; " \` escaped by `\`, NUL written
//! `\00` and leading or trailing spaces (and CRs) escaped; any other value, and the value of an
//! OID-named attribute, written `#` and the lower-case hex of its DER encoding.

use pkcs8::der::asn1::Any;
use pkcs8::der::{Decode, Encode, Tag, Tagged};
use pkcs8::ObjectIdentifier;
use x509_cert::attr::AttributeTypeAndValue;
use x509_cert::name::Name;

/// The attributes the JDK writes by keyword in RFC 2253 form (`AVAKeyword`'s RFC 2253 column).
const KEYWORDS: [(&str, ObjectIdentifier); 9] = [
    ("CN", ObjectIdentifier::new_unwrap("2.5.4.3")),
    ("C", ObjectIdentifier::new_unwrap("2.5.4.6")),
    ("L", ObjectIdentifier::new_unwrap("2.5.4.7")),
    ("ST", ObjectIdentifier::new_unwrap("2.5.4.8")),
    ("O", ObjectIdentifier::new_unwrap("2.5.4.10")),
    ("OU", ObjectIdentifier::new_unwrap("2.5.4.11")),
    ("STREET", ObjectIdentifier::new_unwrap("2.5.4.9")),
    (
        "DC",
        ObjectIdentifier::new_unwrap("0.9.2342.19200300.100.1.25"),
    ),
    (
        "UID",
        ObjectIdentifier::new_unwrap("0.9.2342.19200300.100.1.1"),
    ),
];

/// Characters the JDK escapes anywhere in a value.
const ESCAPED: &str = ",=+<>#;\"\\";

/// The subject of a DER certificate in RFC 2253 form.
pub fn subject(certificate: &[u8]) -> Result<String, String> {
    let cert = x509_cert::Certificate::from_der(certificate).map_err(|e| e.to_string())?;
    Ok(rfc2253(cert.tbs_certificate().subject()))
}

/// `name` as `X500Principal.getName()` writes it.
pub fn rfc2253(name: &Name) -> String {
    let rdns: Vec<String> = name
        .iter_rdn()
        .map(|rdn| rdn.iter().map(attribute).collect::<Vec<_>>().join("+"))
        .collect();
    let mut out = String::new();
    for (i, rdn) in rdns.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(rdn);
    }
    out
}

fn attribute(ava: &AttributeTypeAndValue) -> String {
    let keyword = keyword(&ava.oid);
    let text = keyword.and_then(|_| as_string(&ava.value));
    match (keyword, text) {
        (Some(keyword), Some(text)) => format!("{keyword}={}", escape(&text)),
        (keyword, _) => {
            let name = keyword.map_or_else(|| ava.oid.to_string(), str::to_owned);
            format!("{name}=#{}", hex(&ava.value))
        }
    }
}

fn keyword(oid: &ObjectIdentifier) -> Option<&'static str> {
    KEYWORDS
        .iter()
        .find(|(_, known)| known == oid)
        .map(|(k, _)| *k)
}

/// The value as text, for the string types the JDK writes as text (`AVA.isDerString`), decoded
/// with the JDK's charsets.
fn as_string(value: &Any) -> Option<String> {
    let bytes = value.value();
    let ascii = || {
        bytes
            .iter()
            .map(|b| {
                if b.is_ascii() {
                    char::from(*b)
                } else {
                    '\u{fffd}'
                }
            })
            .collect()
    };
    match value.tag() {
        Tag::Utf8String => Some(String::from_utf8_lossy(bytes).into_owned()),
        Tag::PrintableString | Tag::Ia5String | Tag::GeneralString => Some(ascii()),
        Tag::TeletexString => Some(bytes.iter().map(|b| char::from(*b)).collect()),
        Tag::BmpString => {
            let units: Vec<u16> = bytes
                .chunks(2)
                .map(|p| match p {
                    [hi, lo] => u16::from_be_bytes([*hi, *lo]),
                    _ => 0xfffd,
                })
                .collect();
            Some(String::from_utf16_lossy(&units))
        }
        _ => None,
    }
}

/// The JDK's escaping: specials anywhere, NUL as `\00`, then leading and trailing blanks.
fn escape(value: &str) -> String {
    let mut escaped: Vec<char> = Vec::with_capacity(value.len());
    for c in value.chars() {
        if ESCAPED.contains(c) {
            escaped.push('\\');
            escaped.push(c);
        } else if c == '\0' {
            escaped.extend(['\\', '0', '0']);
        } else {
            escaped.push(c);
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| blank(c)).count();
    let trail = escaped.len() - escaped.iter().rev().take_while(|c| blank(c)).count();
    let mut out = String::with_capacity(escaped.len() + 2);
    for (i, c) in escaped.iter().enumerate() {
        if i < lead || i >= trail {
            out.push('\\');
        }
        out.push(*c);
    }
    out
}

/// Lower-case hex of the value's DER encoding (tag, length and contents, as the JDK re-encodes
/// it).
fn hex(value: &Any) -> String {
    let der = value.to_der().unwrap_or_default();
    der.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_cert::attr::AttributeTypeAndValue;
    use x509_cert::name::RdnSequence;

    fn any(tag: Tag, bytes: &[u8]) -> Any {
        Any::new(tag, bytes).unwrap()
    }

    fn ava(oid: &str, value: Any) -> AttributeTypeAndValue {
        AttributeTypeAndValue {
            oid: ObjectIdentifier::new(oid).unwrap(),
            value,
        }
    }

    /// A name from its RDNs in encoded order (least specific first).
    fn name(rdns: Vec<Vec<AttributeTypeAndValue>>) -> Name {
        use pkcs8::der::asn1::SetOfVec;
        use x509_cert::name::RelativeDistinguishedName;
        let rdns: Vec<RelativeDistinguishedName> = rdns
            .into_iter()
            .map(|avas| RelativeDistinguishedName::from(SetOfVec::try_from(avas).unwrap()))
            .collect();
        let seq = RdnSequence::from(rdns);
        Name::from_der(&seq.to_der().unwrap()).unwrap()
    }

    fn utf8(s: &str) -> Any {
        any(Tag::Utf8String, s.as_bytes())
    }

    #[test]
    fn most_specific_first_with_keywords_and_no_spaces() {
        let n = name(vec![
            vec![ava("2.5.4.6", any(Tag::PrintableString, b"US"))],
            vec![ava("2.5.4.8", utf8("CA"))],
            vec![ava("2.5.4.7", utf8("Palo Alto"))],
            vec![ava("2.5.4.10", utf8("Acme"))],
            vec![ava("2.5.4.11", utf8("eng"))],
            vec![ava("2.5.4.9", utf8("1 Main St"))],
            vec![ava(
                "0.9.2342.19200300.100.1.25",
                any(Tag::Ia5String, b"example"),
            )],
            vec![ava("0.9.2342.19200300.100.1.1", utf8("u1"))],
            vec![ava("2.5.4.3", utf8("alice"))],
        ]);
        assert_eq!(
            rfc2253(&n),
            "CN=alice,UID=u1,DC=example,STREET=1 Main St,OU=eng,O=Acme,L=Palo Alto,ST=CA,C=US"
        );
    }

    #[test]
    fn other_attributes_are_dotted_oids_with_hex_der() {
        // emailAddress (IA5String) and serialNumber (PrintableString): no RFC 2253 keyword.
        let n = name(vec![
            vec![ava("2.5.4.5", any(Tag::PrintableString, b"42"))],
            vec![ava("1.2.840.113549.1.9.1", any(Tag::Ia5String, b"a@b.c"))],
        ]);
        assert_eq!(
            rfc2253(&n),
            "1.2.840.113549.1.9.1=#16056140622e63,2.5.4.5=#13023432"
        );
        // A keyword attribute whose value is not a string type is hex too.
        let n = name(vec![vec![ava("2.5.4.3", any(Tag::OctetString, b"\x01"))]]);
        assert_eq!(rfc2253(&n), "CN=#040101");
    }

    #[test]
    fn multi_valued_rdns_join_with_plus() {
        let n = name(vec![
            vec![ava("2.5.4.10", utf8("Acme"))],
            vec![ava("2.5.4.3", utf8("bob")), ava("2.5.4.11", utf8("ops"))],
        ]);
        assert_eq!(rfc2253(&n), "CN=bob+OU=ops,O=Acme");
    }

    #[test]
    fn specials_are_escaped_as_the_jdk_escapes_them() {
        assert_eq!(
            escape("a,b=c+d<e>f#g;h\"i\\j"),
            r#"a\,b\=c\+d\<e\>f\#g\;h\"i\\j"#
        );
        assert_eq!(escape(" lead"), r"\ lead");
        assert_eq!(escape("trail  "), r"trail\ \ ");
        assert_eq!(escape("  "), r"\ \ ");
        assert_eq!(escape("#x"), r"\#x");
        assert_eq!(escape("nul\0"), r"nul\00");
        assert_eq!(escape("é_ü@*"), "é_ü@*");
        assert_eq!(escape(""), "");
    }

    #[test]
    fn string_types_decode_with_the_jdk_charsets() {
        assert_eq!(
            as_string(&any(Tag::BmpString, &[0, b'h', 0, 0xe9])).as_deref(),
            Some("hé")
        );
        assert_eq!(
            as_string(&any(Tag::TeletexString, &[b'h', 0xe9])).as_deref(),
            Some("hé")
        );
        assert_eq!(
            as_string(&any(Tag::Ia5String, &[b'h', 0xe9])).as_deref(),
            Some("h\u{fffd}")
        );
        assert_eq!(as_string(&any(Tag::OctetString, b"x")), None);
    }
}
