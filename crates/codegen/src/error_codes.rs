//! `ErrorCodes` for responses: a visit of every int16 `ErrorCode` field at any depth, for the
//! daemon's errors-by-code metric (Kafka counts `AbstractResponse.errorCounts()` into
//! `ErrorsPerSec`). Generated rather than written per API so that a new response is counted
//! the day its schema lands; fields with other names (`TopicConfigErrorCode`) are not error
//! codes of the response, as in Kafka's `errorCounts`.
use std::collections::HashMap;
use std::fmt::Write as _;

use crate::names::field_ident;
use crate::schema::{Field, FieldType, MessageSpec, Struct};

/// The `ErrorCodes` impl of every struct of a response `spec`.
pub fn impls(spec: &MessageSpec) -> String {
    let reach = Reach::of(spec);
    let mut out = String::new();
    for s in &spec.structs {
        emit(s, &reach, &mut out);
    }
    out
}

fn emit(s: &Struct, reach: &Reach, out: &mut String) {
    let mut body = String::new();
    for f in &s.fields {
        if let Some(visit) = visit_field(f, reach) {
            let _ = writeln!(
                body,
                "            if {} {{ {visit} }}",
                f.versions.test("version")
            );
        }
    }
    let _ = writeln!(
        out,
        "    impl crate::error::ErrorCodes for {name} {{\n        #[inline]\n        fn for_each_error_code<F: FnMut(i16)>(&self, version: i16, f: &mut F) {{\n{body}        }}\n    }}\n",
        name = s.name
    );
}

/// The statement visiting `f`, when it is or holds an error code.
fn visit_field(f: &Field, reach: &Reach) -> Option<String> {
    let ident = field_ident(&f.name);
    let nullable = !f.nullable_versions.is_empty();
    let visit_struct = "crate::error::ErrorCodes::for_each_error_code";
    match &f.ty {
        FieldType::Int16 if f.name == "ErrorCode" => Some(format!("f(self.{ident});")),
        FieldType::Struct(name) if reach.holds(name) => Some(if nullable {
            format!("if let Some(v) = &self.{ident} {{ {visit_struct}(v, version, f); }}")
        } else {
            format!("{visit_struct}(&self.{ident}, version, f);")
        }),
        FieldType::Array(inner) => match inner.as_ref() {
            FieldType::Struct(name) if reach.holds(name) => {
                let items = if nullable {
                    format!("self.{ident}.iter().flatten()")
                } else {
                    format!("self.{ident}.iter()")
                };
                Some(format!(
                    "for v in {items} {{ {visit_struct}(v, version, f); }}"
                ))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Which structs hold an `ErrorCode` field at some depth: the others are not walked.
struct Reach {
    holds: HashMap<String, bool>,
}

impl Reach {
    fn of(spec: &MessageSpec) -> Reach {
        let by_name: HashMap<&str, &Struct> =
            spec.structs.iter().map(|s| (s.name.as_str(), s)).collect();
        let mut reach = Reach {
            holds: HashMap::new(),
        };
        for s in &spec.structs {
            reach.resolve(&s.name, &by_name, 0);
        }
        reach
    }

    fn holds(&self, name: &str) -> bool {
        self.holds.get(name).copied().unwrap_or(false)
    }

    fn resolve(&mut self, name: &str, by_name: &HashMap<&str, &Struct>, depth: usize) -> bool {
        if let Some(known) = self.holds.get(name) {
            return *known;
        }
        // Kafka's schemas nest a few levels; a cycle would be a broken schema, not a message.
        let Some(s) = by_name.get(name).filter(|_| depth < 32) else {
            return false;
        };
        let holds = s.fields.iter().any(|f| match &f.ty {
            FieldType::Int16 => f.name == "ErrorCode",
            FieldType::Struct(n) => self.resolve(n, by_name, depth + 1),
            FieldType::Array(inner) => match inner.as_ref() {
                FieldType::Struct(n) => self.resolve(n, by_name, depth + 1),
                _ => false,
            },
            _ => false,
        });
        self.holds.insert(name.to_owned(), holds);
        holds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESPONSE: &str = r#"{
      "apiKey": 99, "type": "response", "name": "DemoResponse", "validVersions": "0-2",
      "flexibleVersions": "none",
      "fields": [
        { "name": "ErrorCode", "type": "int16", "versions": "1+" },
        { "name": "Brokers", "type": "[]Broker", "versions": "0+", "fields": [
          { "name": "NodeId", "type": "int32", "versions": "0+" }
        ]},
        { "name": "Topics", "type": "[]Topic", "versions": "0+", "fields": [
          { "name": "TopicConfigErrorCode", "type": "int16", "versions": "0+" },
          { "name": "Partitions", "type": "[]Partition", "versions": "2+", "fields": [
            { "name": "ErrorCode", "type": "int16", "versions": "0+" }
          ]}
        ]}
      ]
    }"#;

    #[test]
    fn every_error_code_field_is_visited_in_its_versions_and_nothing_else() {
        let spec = crate::schema::parse("DemoResponse.json", RESPONSE).unwrap();
        let code = impls(&spec);
        assert!(
            code.contains("if version >= 1 { f(self.error_code); }"),
            "{code}"
        );
        assert!(
            code.contains("if version >= 2 { for v in self.partitions.iter()"),
            "{code}"
        );
        assert!(code.contains("for v in self.topics.iter()"), "{code}");
        assert!(
            !code.contains("self.brokers"),
            "no error code below Brokers: {code}"
        );
        assert!(!code.contains("topic_config_error_code"), "{code}");
    }
}
