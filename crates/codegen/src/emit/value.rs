//! Per wire type: its Rust type, and the code that writes, sizes, reads and makes up a value.

use super::KP;
use crate::schema::{Field, FieldType};

pub(super) fn unreachable_type() -> String {
    // Validation in schema.rs rejects nullable fixed-width types before emission.
    "compile_error!(\"nullable fixed-width type\");".to_string()
}

fn rust_base_type(t: &FieldType) -> String {
    match t {
        FieldType::Bool => "bool".into(),
        FieldType::Int8 => "i8".into(),
        FieldType::Int16 => "i16".into(),
        FieldType::Int32 => "i32".into(),
        FieldType::Int64 => "i64".into(),
        FieldType::Uint16 => "u16".into(),
        FieldType::Float64 => "f64".into(),
        FieldType::String => "::std::string::String".into(),
        FieldType::Bytes => "::bytes::Bytes".into(),
        FieldType::Records => "crate::RecordSet".into(),
        FieldType::Uuid => "::uuid::Uuid".into(),
        FieldType::Struct(n) => n.clone(),
        FieldType::Array(inner) => format!("::std::vec::Vec<{}>", rust_base_type(inner)),
    }
}

pub(super) fn rust_type(f: &Field) -> String {
    let base = rust_base_type(&f.ty);
    if f.nullable_versions.is_empty() {
        base
    } else {
        format!("::std::option::Option<{base}>")
    }
}

fn fixed_size(t: &FieldType) -> Option<usize> {
    Some(match t {
        FieldType::Bool | FieldType::Int8 => 1,
        FieldType::Int16 | FieldType::Uint16 => 2,
        FieldType::Int32 => 4,
        FieldType::Int64 | FieldType::Float64 => 8,
        FieldType::Uuid => 16,
        _ => return None,
    })
}

/// Statement writing the non-null value behind reference `r`.
pub(super) fn write_value(t: &FieldType, r: &str, fx: &str) -> String {
    match t {
        FieldType::Bool => format!("crate::codec::write_bool(buf, *{r});"),
        FieldType::Int8 => format!("crate::codec::write_i8(buf, *{r});"),
        FieldType::Int16 => format!("crate::codec::write_i16(buf, *{r});"),
        FieldType::Int32 => format!("crate::codec::write_i32(buf, *{r});"),
        FieldType::Int64 => format!("crate::codec::write_i64(buf, *{r});"),
        FieldType::Uint16 => format!("crate::codec::write_u16(buf, *{r});"),
        FieldType::Float64 => format!("crate::codec::write_f64(buf, *{r});"),
        FieldType::String => format!("crate::codec::write_string(buf, {r}, {fx})?;"),
        FieldType::Bytes => format!("crate::codec::write_bytes(buf, {r}, {fx})?;"),
        FieldType::Records => format!("crate::codec::write_records(buf, {r}, {fx})?;"),
        FieldType::Uuid => format!("crate::codec::write_uuid(buf, {r});"),
        FieldType::Struct(_) => format!("({r}).encode(buf, version)?;"),
        FieldType::Array(inner) => format!(
            "crate::codec::write_array_len(buf, Some(({r}).len()), {fx})?; for el in ({r}).iter() {{ {} }}",
            write_value(inner, "el", fx)
        ),
    }
}

/// Expression for the encoded size of the non-null value behind reference `r`.
pub(super) fn size_value(t: &FieldType, r: &str, fx: &str) -> String {
    if let Some(n) = fixed_size(t) {
        return n.to_string();
    }
    match t {
        FieldType::String => format!("crate::codec::string_size({r}, {fx})"),
        FieldType::Bytes => format!("crate::codec::bytes_size({r}, {fx})"),
        FieldType::Records => format!("crate::codec::records_size({r}, {fx})"),
        FieldType::Struct(_) => format!("({r}).compute_size(version)?"),
        FieldType::Array(inner) => match fixed_size(inner) {
            Some(n) => format!("(crate::codec::array_len_size(Some(({r}).len()), {fx}) + ({r}).len() * {n})"),
            None => format!(
                "{{ let mut s = crate::codec::array_len_size(Some(({r}).len()), {fx}); for el in ({r}).iter() {{ s += {}; }} s }}",
                size_value(inner, "el", fx)
            ),
        },
        _ => unreachable_type(),
    }
}

/// Expression for the fewest bytes a non-null value of type `t` takes on the wire.
pub(super) fn min_size_value(t: &FieldType, fx: &str) -> String {
    if let Some(n) = fixed_size(t) {
        return n.to_string();
    }
    match t {
        FieldType::String => format!("(if {fx} {{ 1 }} else {{ 2 }})"),
        FieldType::Bytes | FieldType::Records | FieldType::Array(_) => {
            format!("(if {fx} {{ 1 }} else {{ 4 }})")
        }
        FieldType::Struct(name) => format!("{name}::min_wire_size(version)"),
        _ => unreachable_type(),
    }
}

/// Expression reading a non-null value from buffer `b`.
pub(super) fn read_value(t: &FieldType, fx: &str, b: &str, owner: &str, field: &str) -> String {
    match t {
        FieldType::Bool => format!("crate::codec::read_bool({b})?"),
        FieldType::Int8 => format!("crate::codec::read_i8({b})?"),
        FieldType::Int16 => format!("crate::codec::read_i16({b})?"),
        FieldType::Int32 => format!("crate::codec::read_i32({b})?"),
        FieldType::Int64 => format!("crate::codec::read_i64({b})?"),
        FieldType::Uint16 => format!("crate::codec::read_u16({b})?"),
        FieldType::Float64 => format!("crate::codec::read_f64({b})?"),
        FieldType::String => format!("crate::codec::read_string({b}, {fx})?"),
        FieldType::Bytes => format!("crate::codec::read_bytes({b}, {fx})?"),
        FieldType::Records => format!("crate::RecordSet::from(crate::codec::read_bytes({b}, {fx})?)"),
        FieldType::Uuid => format!("crate::codec::read_uuid({b})?"),
        FieldType::Struct(name) => format!("<{name} as {KP}::Decodable>::decode({b}, version)?"),
        FieldType::Array(inner) => format!(
            "match crate::codec::read_array_len({b}, {fx})? {{ None => return Err(crate::codec::null_not_allowed({owner:?}, {field:?}, version)), Some(n) => {{ let mut items = crate::codec::array_with_capacity(n, {}, {b})?; for _ in 0..n {{ items.push({}); }} items }} }}",
            min_size_value(inner, fx),
            read_value(inner, fx, b, owner, field)
        ),
    }
}

pub(super) fn arbitrary_value(t: &FieldType) -> String {
    match t {
        FieldType::Bool => "rng.random::<bool>()".into(),
        FieldType::Int8 => "rng.random::<i8>()".into(),
        FieldType::Int16 => "rng.random::<i16>()".into(),
        FieldType::Int32 => "rng.random::<i32>()".into(),
        FieldType::Int64 => "rng.random::<i64>()".into(),
        FieldType::Uint16 => "rng.random::<u16>()".into(),
        FieldType::Float64 => "rng.random::<f64>()".into(),
        FieldType::String => "crate::codec::arbitrary_string(rng)".into(),
        FieldType::Bytes => "crate::codec::arbitrary_bytes(rng)".into(),
        FieldType::Records => "crate::RecordSet::from(crate::codec::arbitrary_bytes(rng))".into(),
        FieldType::Uuid => "::uuid::Uuid::from_u128(rng.random::<u128>())".into(),
        FieldType::Struct(name) => format!("{name}::arbitrary(rng, version)"),
        FieldType::Array(inner) => format!(
            "(0..rng.random_range(0..4usize)).map(|_| {}).collect::<::std::vec::Vec<_>>()",
            arbitrary_value(inner)
        ),
    }
}
