//! Per field of a struct: the code that writes, sizes and reads it, a random value of it, and
//! its default.

use serde_json::Value;

use super::value::{
    arbitrary_value, min_size_value, read_value, size_value, unreachable_type, write_value,
};
use super::{Ctx, KP};
use crate::names::field_ident;
use crate::schema::{Field, FieldType};
use crate::CodegenError;

impl Ctx<'_> {
    pub(super) fn nullable(&self, f: &Field) -> bool {
        !f.nullable_versions.is_empty()
    }

    pub(super) fn write_field(&self, f: &Field, fx: &str, ind: &str) -> String {
        let id = field_ident(&f.name);
        let e = format!("self.{id}");
        if !self.nullable(f) {
            return format!("{ind}{}\n", write_value(&f.ty, &format!("&{e}"), fx));
        }
        let null_check = format!(
            "if !({}) {{ return Err(crate::codec::null_not_allowed({:?}, {:?}, version)); }}",
            f.nullable_versions.test("version"),
            self.strukt.name,
            f.name
        );
        let w = match &f.ty {
            FieldType::Uuid => format!("crate::codec::write_nullable_uuid(buf, &{e});"),
            FieldType::String => format!("crate::codec::write_nullable_string(buf, {e}.as_deref(), {fx})?;"),
            FieldType::Bytes => format!("crate::codec::write_nullable_bytes(buf, {e}.as_ref(), {fx})?;"),
            FieldType::Records => format!("crate::codec::write_nullable_records(buf, {e}.as_ref(), {fx})?;"),
            FieldType::Array(_) => format!(
                "match &{e} {{ None => crate::codec::write_array_len(buf, None, {fx})?, Some(x) => {{ {} }} }}",
                write_value(&f.ty, "x", fx)
            ),
            FieldType::Struct(_) => format!(
                "match &{e} {{ None => crate::codec::write_struct_marker(buf, false), Some(x) => {{ crate::codec::write_struct_marker(buf, true); x.encode(buf, version)?; }} }}"
            ),
            _ => unreachable_type(),
        };
        format!("{ind}if {e}.is_none() {{ {null_check} }}\n{ind}{w}\n")
    }

    pub(super) fn size_field(&self, f: &Field, fx: &str) -> String {
        let id = field_ident(&f.name);
        let e = format!("self.{id}");
        if !self.nullable(f) {
            return size_value(&f.ty, &format!("&{e}"), fx);
        }
        match &f.ty {
            FieldType::Uuid => "16".into(),
            FieldType::String => {
                format!("crate::codec::nullable_string_size({e}.as_deref(), {fx})")
            }
            FieldType::Bytes => format!("crate::codec::nullable_bytes_size({e}.as_ref(), {fx})"),
            FieldType::Records => {
                format!("crate::codec::nullable_records_size({e}.as_ref(), {fx})")
            }
            FieldType::Array(_) => format!(
                "match &{e} {{ None => crate::codec::array_len_size(None, {fx}), Some(x) => {} }}",
                size_value(&f.ty, "x", fx)
            ),
            FieldType::Struct(_) => {
                format!("1 + match &{e} {{ None => 0, Some(x) => x.compute_size(version)? }}")
            }
            _ => unreachable_type(),
        }
    }

    pub(super) fn read_field(&self, f: &Field, fx: &str, b: &str) -> String {
        if !self.nullable(f) {
            return read_value(&f.ty, fx, b, &self.strukt.name, &f.name);
        }
        let nullable_now = f.nullable_versions.test("version");
        let read = match &f.ty {
            // Outside its nullable versions a uuid is read as-is (the zero uuid is then a value).
            FieldType::Uuid => {
                return format!(
                    "if {nullable_now} {{ crate::codec::read_nullable_uuid({b})? }} else {{ Some(crate::codec::read_uuid({b})?) }}"
                )
            }
            FieldType::String => format!("crate::codec::read_nullable_string({b}, {fx})?"),
            FieldType::Bytes => format!("crate::codec::read_nullable_bytes({b}, {fx})?"),
            FieldType::Records => format!("crate::codec::read_nullable_bytes({b}, {fx})?.map(crate::RecordSet::from)"),
            FieldType::Array(inner) => format!(
                "match crate::codec::read_array_len({b}, {fx})? {{ None => None, Some(n) => {{ let mut items = crate::codec::array_with_capacity(n, {}, {b})?; for _ in 0..n {{ items.push({}); }} Some(items) }} }}",
                min_size_value(inner, fx),
                read_value(inner, fx, b, &self.strukt.name, &f.name)
            ),
            FieldType::Struct(name) => format!(
                "if crate::codec::read_struct_marker({b})? {{ Some(<{name} as {KP}::Decodable>::decode({b}, version)?) }} else {{ None }}"
            ),
            _ => unreachable_type(),
        };
        format!(
            "{{ let x = {read}; if x.is_none() && !({nullable_now}) {{ return Err(crate::codec::null_not_allowed({:?}, {:?}, version)); }} x }}",
            self.strukt.name, f.name
        )
    }

    pub(super) fn arbitrary_field(&self, f: &Field) -> String {
        let value = arbitrary_value(&f.ty);
        if !self.nullable(f) {
            return value;
        }
        let value = if f.ty == FieldType::Uuid {
            "::uuid::Uuid::from_u128(rng.random::<u128>() | 1)".to_string()
        } else {
            value
        };
        format!(
            "if ({}) && rng.random_ratio(1, 4) {{ None }} else {{ Some({value}) }}",
            f.nullable_versions.test("version")
        )
    }

    pub(super) fn default_value(&self, f: &Field) -> Result<String, CodegenError> {
        let raw = default_text(f);
        let is_null = raw.as_deref() == Some("null");
        if self.nullable(f) {
            // Kafka's generator gives a records field no default but null (FieldSpec.fieldDefault).
            let null_default = is_null
                || matches!(
                    f.ty,
                    FieldType::Struct(_) | FieldType::Uuid | FieldType::Records
                );
            if null_default {
                return Ok("None".into());
            }
        } else if is_null {
            return Err(self.err(f, "default null on a non-nullable field"));
        }
        let value = match &f.ty {
            FieldType::Bool => match raw.as_deref() {
                None | Some("false") => "false".into(),
                Some("true") => "true".into(),
                Some(o) => return Err(self.err(f, format!("bad bool default {o:?}"))),
            },
            FieldType::Int8 => int_default(raw.as_deref(), i8::MIN as i64, i8::MAX as i64)
                .map_err(|m| self.err(f, m))?,
            FieldType::Int16 => int_default(raw.as_deref(), i16::MIN as i64, i16::MAX as i64)
                .map_err(|m| self.err(f, m))?,
            FieldType::Int32 => int_default(raw.as_deref(), i32::MIN as i64, i32::MAX as i64)
                .map_err(|m| self.err(f, m))?,
            FieldType::Int64 => {
                int_default(raw.as_deref(), i64::MIN, i64::MAX).map_err(|m| self.err(f, m))?
            }
            FieldType::Uint16 => {
                int_default(raw.as_deref(), 0, u16::MAX as i64).map_err(|m| self.err(f, m))?
            }
            FieldType::Float64 => match raw.as_deref() {
                None => "0.0".into(),
                Some(t) => format!(
                    "{:?}",
                    t.parse::<f64>()
                        .map_err(|_| self.err(f, "bad float default"))?
                ),
            },
            FieldType::String => {
                format!("::std::string::String::from({:?})", raw.unwrap_or_default())
            }
            FieldType::Bytes => "::bytes::Bytes::new()".into(),
            FieldType::Records => "crate::RecordSet::default()".into(),
            FieldType::Uuid => "::uuid::Uuid::nil()".into(),
            FieldType::Struct(name) => format!("<{name} as ::std::default::Default>::default()"),
            FieldType::Array(_) => "::std::vec::Vec::new()".into(),
        };
        Ok(if self.nullable(f) {
            format!("Some({value})")
        } else {
            value
        })
    }

    /// A cheap test that `e` holds the field's default (used for version and tag checks).
    pub(super) fn is_default(&self, f: &Field, e: &str) -> Result<String, CodegenError> {
        let d = self.default_value(f)?;
        if d == "None" {
            return Ok(format!("{e}.is_none()"));
        }
        let some = d.starts_with("Some(");
        Ok(match (&f.ty, some) {
            (FieldType::Array(_), false) => format!("{e}.is_empty()"),
            (FieldType::Array(_), true) => format!("{e}.as_ref().is_some_and(|x| x.is_empty())"),
            (FieldType::String, false) => {
                format!("{e} == {:?}", default_text(f).unwrap_or_default())
            }
            (FieldType::String, true) => format!(
                "{e}.as_deref() == Some({:?})",
                default_text(f).unwrap_or_default()
            ),
            (FieldType::Bytes | FieldType::Records, false) => format!("{e}.is_empty()"),
            (FieldType::Bytes | FieldType::Records, true) => {
                format!("{e}.as_ref().is_some_and(|x| x.is_empty())")
            }
            (FieldType::Uuid, false) => format!("{e}.is_nil()"),
            _ => format!("{e} == {d}"),
        })
    }
}

fn default_text(f: &Field) -> Option<String> {
    match &f.default {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(other) => Some(other.to_string()),
    }
}

fn int_default(raw: Option<&str>, min: i64, max: i64) -> Result<String, String> {
    let Some(t) = raw else { return Ok("0".into()) };
    let t = t.trim();
    let v = if let Some(hex) = t.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).map_err(|_| format!("bad integer default {t:?}"))?
    } else {
        t.parse::<i64>()
            .map_err(|_| format!("bad integer default {t:?}"))?
    };
    if v < min || v > max {
        return Err(format!("default {v} out of range"));
    }
    Ok(v.to_string())
}
