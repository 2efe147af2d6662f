//! The subset of Apache Kafka's message-spec JSON format that kcoord's schemas use.
use serde::Deserialize;
use serde_json::Value;

use crate::versions::Versions;
use crate::CodegenError;

/// What a schema file describes; decides which traits and constants are generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Response,
    Header,
    Metadata,
    CoordinatorKey,
    CoordinatorValue,
    Data,
}

impl Kind {
    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "request" => Kind::Request,
            "response" => Kind::Response,
            "header" => Kind::Header,
            "metadata" => Kind::Metadata,
            "coordinator-key" => Kind::CoordinatorKey,
            "coordinator-value" => Kind::CoordinatorValue,
            "data" => Kind::Data,
            _ => return None,
        })
    }

    pub fn is_record(self) -> bool {
        matches!(
            self,
            Kind::Metadata | Kind::CoordinatorKey | Kind::CoordinatorValue
        )
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawMessage {
    api_key: Option<i16>,
    #[serde(rename = "type")]
    kind: String,
    name: String,
    valid_versions: String,
    #[serde(default)]
    flexible_versions: Option<String>,
    #[serde(default)]
    listeners: Vec<String>,
    #[serde(default)]
    latest_version_unstable: Option<bool>,
    #[serde(default)]
    about: Option<String>,
    #[serde(default)]
    fields: Vec<RawField>,
    #[serde(default)]
    common_structs: Vec<RawStruct>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawStruct {
    name: String,
    #[serde(default)]
    versions: Option<String>,
    fields: Vec<RawField>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawField {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    versions: String,
    #[serde(default)]
    nullable_versions: Option<String>,
    #[serde(default)]
    tagged_versions: Option<String>,
    #[serde(default)]
    tag: Option<Value>,
    #[serde(default)]
    default: Option<Value>,
    #[serde(default)]
    ignorable: bool,
    #[serde(default)]
    map_key: bool,
    #[serde(default)]
    entity_type: Option<String>,
    #[serde(default)]
    about: Option<String>,
    #[serde(default)]
    flexible_versions: Option<String>,
    #[serde(default)]
    zero_copy: bool,
    #[serde(default)]
    fields: Option<Vec<RawField>>,
}

/// A field's wire type.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldType {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint16,
    Float64,
    String,
    Bytes,
    Records,
    Uuid,
    Struct(String),
    Array(Box<FieldType>),
}

impl FieldType {
    fn parse(s: &str) -> FieldType {
        if let Some(inner) = s.strip_prefix("[]") {
            return FieldType::Array(Box::new(FieldType::parse(inner)));
        }
        match s {
            "bool" => FieldType::Bool,
            "int8" => FieldType::Int8,
            "int16" => FieldType::Int16,
            "int32" => FieldType::Int32,
            "int64" => FieldType::Int64,
            "uint16" => FieldType::Uint16,
            "float64" => FieldType::Float64,
            "string" => FieldType::String,
            "bytes" => FieldType::Bytes,
            "records" => FieldType::Records,
            "uuid" => FieldType::Uuid,
            other => FieldType::Struct(other.to_string()),
        }
    }

    /// Types that may be null on the wire.
    pub fn can_be_nullable(&self) -> bool {
        matches!(
            self,
            FieldType::String
                | FieldType::Bytes
                | FieldType::Records
                | FieldType::Uuid
                | FieldType::Struct(_)
                | FieldType::Array(_)
        )
    }
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ty: FieldType,
    pub versions: Versions,
    pub nullable_versions: Versions,
    pub tagged: Option<(i32, Versions)>,
    pub default: Option<Value>,
    pub ignorable: bool,
    pub map_key: bool,
    pub entity_type: Option<String>,
    pub about: Option<String>,
    /// A field-level override of the message's flexible versions (RequestHeader's ClientId).
    pub flexible_versions: Option<Versions>,
}

#[derive(Debug, Clone)]
pub struct Struct {
    pub name: String,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone)]
pub struct MessageSpec {
    pub file: String,
    pub api_key: Option<i16>,
    pub kind: Kind,
    pub name: String,
    pub about: Option<String>,
    pub valid_versions: Versions,
    pub flexible_versions: Versions,
    pub listeners: Vec<String>,
    /// The top-level struct first, then every nested and common struct.
    pub structs: Vec<Struct>,
}

impl MessageSpec {
    pub fn top(&self) -> &Struct {
        &self.structs[0]
    }
}

pub fn parse(file: &str, text: &str) -> Result<MessageSpec, CodegenError> {
    let err = |msg: String| CodegenError::Schema {
        file: file.to_string(),
        msg,
    };
    let raw: RawMessage = serde_json::from_str(text).map_err(|e| err(e.to_string()))?;
    let _ = raw.latest_version_unstable;
    let kind = Kind::parse(&raw.kind)
        .ok_or_else(|| err(format!("unknown message type {:?}", raw.kind)))?;
    let valid_versions = Versions::parse(&raw.valid_versions).map_err(&err)?;
    let flexible_versions =
        Versions::parse(raw.flexible_versions.as_deref().unwrap_or("none")).map_err(&err)?;
    if matches!(kind, Kind::Request | Kind::Response) && raw.api_key.is_none() {
        return Err(err("requests and responses need an apiKey".into()));
    }
    let mut structs = Vec::new();
    let top_fields = convert_fields(raw.fields, &mut structs).map_err(&err)?;
    structs.insert(
        0,
        Struct {
            name: raw.name.clone(),
            fields: top_fields,
        },
    );
    for common in raw.common_structs {
        let _ = common.versions;
        let fields = convert_fields(common.fields, &mut structs).map_err(&err)?;
        structs.push(Struct {
            name: common.name,
            fields,
        });
    }
    let spec = MessageSpec {
        file: file.to_string(),
        api_key: raw.api_key,
        kind,
        name: raw.name,
        about: raw.about,
        valid_versions,
        flexible_versions,
        listeners: raw.listeners,
        structs,
    };
    validate(&spec).map_err(err)?;
    Ok(spec)
}

fn convert_fields(raw: Vec<RawField>, structs: &mut Vec<Struct>) -> Result<Vec<Field>, String> {
    let mut out = Vec::with_capacity(raw.len());
    for f in raw {
        let ty = FieldType::parse(&f.ty);
        if let Some(nested) = f.fields {
            let name = match &ty {
                FieldType::Struct(n) => n.clone(),
                FieldType::Array(inner) => match inner.as_ref() {
                    FieldType::Struct(n) => n.clone(),
                    _ => {
                        return Err(format!(
                            "field {} has nested fields but type {}",
                            f.name, f.ty
                        ))
                    }
                },
                _ => {
                    return Err(format!(
                        "field {} has nested fields but type {}",
                        f.name, f.ty
                    ))
                }
            };
            let fields = convert_fields(nested, structs)?;
            structs.push(Struct { name, fields });
        }
        let versions = Versions::parse(&f.versions)?;
        let nullable_versions = match &f.nullable_versions {
            Some(v) => Versions::parse(v)?,
            None => Versions::NONE,
        };
        let tagged = match (&f.tag, &f.tagged_versions) {
            (None, None) => None,
            (Some(tag), Some(tv)) => {
                let tag = match tag {
                    Value::Number(n) => n.as_i64(),
                    Value::String(s) => s.parse::<i64>().ok(),
                    _ => None,
                }
                .and_then(|t| i32::try_from(t).ok())
                .ok_or_else(|| format!("field {}: bad tag {tag}", f.name))?;
                Some((tag, Versions::parse(tv)?))
            }
            _ => {
                return Err(format!(
                    "field {}: tag and taggedVersions go together",
                    f.name
                ))
            }
        };
        let flexible_versions = match &f.flexible_versions {
            Some(v) => Some(Versions::parse(v)?),
            None => None,
        };
        let _ = f.zero_copy;
        out.push(Field {
            name: f.name,
            ty,
            versions,
            nullable_versions,
            tagged,
            default: f.default,
            ignorable: f.ignorable,
            map_key: f.map_key,
            entity_type: f.entity_type,
            about: f.about,
            flexible_versions,
        });
    }
    Ok(out)
}

fn validate(spec: &MessageSpec) -> Result<(), String> {
    let mut names = std::collections::HashSet::new();
    for s in &spec.structs {
        if !names.insert(s.name.as_str()) {
            return Err(format!("struct {} is defined twice", s.name));
        }
    }
    for s in &spec.structs {
        let mut tags = std::collections::HashSet::new();
        for f in &s.fields {
            if !f.nullable_versions.is_empty() && !f.ty.can_be_nullable() {
                return Err(format!(
                    "{}.{}: type {:?} cannot be nullable",
                    s.name, f.name, f.ty
                ));
            }
            if !f.nullable_versions.is_empty()
                && !f.versions.contains_all(&f.nullable_versions)
                && !f.versions.overlaps(&f.nullable_versions)
            {
                return Err(format!(
                    "{}.{}: nullableVersions outside versions",
                    s.name, f.name
                ));
            }
            if let Some((tag, tv)) = &f.tagged {
                if !tags.insert(*tag) {
                    return Err(format!("{}: tag {tag} used twice", s.name));
                }
                if *tv != f.versions {
                    return Err(format!(
                        "{}.{}: taggedVersions must equal versions",
                        s.name, f.name
                    ));
                }
                if !spec.flexible_versions.contains_all(tv) {
                    return Err(format!(
                        "{}.{}: tagged outside flexible versions",
                        s.name, f.name
                    ));
                }
            }
            let inner = match &f.ty {
                FieldType::Array(inner) => inner.as_ref(),
                other => other,
            };
            if let FieldType::Struct(n) = inner {
                if !names.contains(n.as_str()) {
                    return Err(format!("{}.{}: unknown struct type {n}", s.name, f.name));
                }
            }
            if let FieldType::Array(inner) = &f.ty {
                if matches!(inner.as_ref(), FieldType::Array(_)) {
                    return Err(format!(
                        "{}.{}: arrays of arrays are not supported",
                        s.name, f.name
                    ));
                }
            }
        }
    }
    Ok(())
}
