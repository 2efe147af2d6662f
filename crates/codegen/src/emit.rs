//! Emits Rust source for one schema: structs, `Default`, versioned `Encodable`/`Decodable`,
//! kafka-protocol's `Message`/`HeaderVersion`/`Request`, and a random-value generator for tests.
use std::fmt::Write as _;

use crate::names::{field_ident, snake_case};
use crate::schema::{Field, FieldType, Kind, MessageSpec, Struct};
use crate::versions::Versions;
use crate::CodegenError;

mod field;
mod value;

use value::{min_size_value, rust_type};

const KP: &str = "::kafka_protocol::protocol";

/// Rust source of a module for `spec`, followed by a re-export of its top-level type.
pub fn module(spec: &MessageSpec) -> Result<String, CodegenError> {
    let mut out = String::new();
    let module = snake_case(&spec.name);
    if let Some(about) = &spec.about {
        for line in about.lines() {
            let _ = writeln!(out, "/// {line}");
        }
    }
    let _ = writeln!(
        out,
        "/// Generated from `schemas/{}`; valid versions {}.",
        spec.file,
        range_text(&spec.valid_versions)
    );
    let _ = writeln!(out, "pub mod {module} {{");
    out.push_str("    #[allow(unused_imports)]\n    use ::kafka_protocol::protocol::{Encodable as _, Decodable as _};\n\n");
    for s in &spec.structs {
        let ctx = Ctx { spec, strukt: s };
        ctx.emit(&mut out)?;
    }
    emit_top_traits(spec, &mut out);
    if spec.kind == Kind::Response {
        out.push_str(&crate::error_codes::impls(spec));
    }
    out.push_str("}\n");
    let _ = writeln!(out, "pub use {module}::{};\n", spec.name);
    Ok(out)
}

/// One round-trip case per top-level type, for the generated property tests.
pub fn round_trip_case(spec: &MessageSpec) -> String {
    format!(
        "        RoundTripCase {{ name: {name:?}, versions: ({min}, {max}), check: |rng, v| crate::codec::check_round_trip(&{module}::{name}::arbitrary(rng, v), v), sample: |rng, v| crate::codec::encode_sample(&{module}::{name}::arbitrary(rng, v), v) }},\n",
        name = spec.name,
        module = snake_case(&spec.name),
        min = spec.valid_versions.min,
        max = spec.valid_versions.max,
    )
}

/// One minimum-size case per struct: `min_wire_size` never exceeds the size of the default
/// value (the shortest encoding, but for defaults that are non-empty strings).
pub fn min_size_cases(spec: &MessageSpec) -> String {
    let module = snake_case(&spec.name);
    spec.structs
        .iter()
        .map(|s| {
            format!(
                "        MinSizeCase {{ name: \"{module}::{name}\", versions: ({min}, {max}), sizes: |v| ({module}::{name}::min_wire_size(v), {KP}::Encodable::compute_size(&<{module}::{name} as ::std::default::Default>::default(), v)) }},\n",
                name = s.name,
                min = spec.valid_versions.min,
                max = spec.valid_versions.max,
            )
        })
        .collect()
}

fn range_text(v: &Versions) -> String {
    if v.is_empty() {
        "none".into()
    } else if v.max == i16::MAX {
        format!("{}+", v.min)
    } else if v.min == v.max {
        v.min.to_string()
    } else {
        format!("{}-{}", v.min, v.max)
    }
}

fn emit_top_traits(spec: &MessageSpec, out: &mut String) {
    let name = &spec.name;
    let vv = &spec.valid_versions;
    let _ = writeln!(
        out,
        "    impl {KP}::Message for {name} {{\n        const VERSIONS: {KP}::VersionRange = {KP}::VersionRange {{ min: {}, max: {} }};\n        const DEPRECATED_VERSIONS: ::std::option::Option<{KP}::VersionRange> = None;\n    }}\n",
        vv.min, vv.max
    );
    if let Some(key) = spec.api_key {
        let _ = writeln!(out, "    impl {name} {{\n        /// The API key (or record type) of this message.\n        pub const API_KEY: i16 = {key};\n    }}\n");
    }
    let flex = spec.flexible_versions.test("version");
    match spec.kind {
        Kind::Request => {
            let _ = writeln!(
                out,
                "    impl {KP}::HeaderVersion for {name} {{\n        fn header_version(version: i16) -> i16 {{ if {flex} {{ 2 }} else {{ 1 }} }}\n    }}\n"
            );
            if let Some(base) = name.strip_suffix("Request") {
                let response = format!("{base}Response");
                let _ = writeln!(
                    out,
                    "    impl {KP}::Request for {name} {{\n        const KEY: i16 = {};\n        type Response = super::{}::{response};\n    }}\n",
                    spec.api_key.unwrap_or_default(),
                    snake_case(&response)
                );
            }
        }
        Kind::Response => {
            // KIP-511: the ApiVersions response header is always v0 so that a client that sent a
            // too-new request can still read the error.
            let body = if name == "ApiVersionsResponse" {
                "0".to_string()
            } else {
                format!("if {flex} {{ 1 }} else {{ 0 }}")
            };
            let _ = writeln!(
                out,
                "    impl {KP}::HeaderVersion for {name} {{\n        fn header_version(version: i16) -> i16 {{ {body} }}\n    }}\n"
            );
        }
        _ => {}
    }
}

struct Ctx<'a> {
    spec: &'a MessageSpec,
    strukt: &'a Struct,
}

impl Ctx<'_> {
    fn emit(&self, out: &mut String) -> Result<(), CodegenError> {
        self.emit_struct(out);
        self.emit_default(out)?;
        self.emit_encode(out)?;
        self.emit_decode(out)?;
        self.emit_min_wire_size(out);
        self.emit_arbitrary(out);
        Ok(())
    }

    fn err(&self, f: &Field, msg: impl std::fmt::Display) -> CodegenError {
        CodegenError::Schema {
            file: self.spec.file.clone(),
            msg: format!("{}.{}: {msg}", self.strukt.name, f.name),
        }
    }

    fn flexible_test(&self) -> String {
        self.spec.flexible_versions.test("version")
    }

    /// The flexibility of one field's own encoding: the message's, unless the field overrides it.
    fn field_flex(&self, f: &Field) -> String {
        match &f.flexible_versions {
            Some(v) => format!("({})", v.test("version")),
            None => "flexible".to_string(),
        }
    }

    fn emit_struct(&self, out: &mut String) {
        let s = self.strukt;
        let _ = writeln!(
            out,
            "    #[derive(Debug, Clone, PartialEq)]\n    pub struct {} {{",
            s.name
        );
        for f in &s.fields {
            if let Some(about) = &f.about {
                for line in about.lines() {
                    let _ = writeln!(out, "        /// {line}");
                }
            }
            let mut notes = vec![format!("versions {}", range_text(&f.versions))];
            if !f.nullable_versions.is_empty() {
                notes.push(format!("nullable {}", range_text(&f.nullable_versions)));
            }
            if let Some((tag, _)) = f.tagged {
                notes.push(format!("tag {tag}"));
            }
            if f.ignorable {
                notes.push("ignorable".into());
            }
            if f.map_key {
                notes.push("map key".into());
            }
            if let Some(e) = &f.entity_type {
                notes.push(format!("entity {e}"));
            }
            let _ = writeln!(out, "        ///\n        /// Wire: {}.", notes.join(", "));
            let _ = writeln!(
                out,
                "        pub {}: {},",
                field_ident(&f.name),
                rust_type(f)
            );
        }
        out.push_str("        /// Tagged fields this version of the schema does not know; kept for round trips.\n");
        out.push_str("        pub unknown_tagged_fields: ::std::collections::BTreeMap<i32, ::bytes::Bytes>,\n    }\n\n");
    }

    fn emit_default(&self, out: &mut String) -> Result<(), CodegenError> {
        let s = self.strukt;
        let _ = writeln!(out, "    impl ::std::default::Default for {} {{\n        fn default() -> Self {{\n            Self {{", s.name);
        for f in &s.fields {
            let _ = writeln!(
                out,
                "                {}: {},",
                field_ident(&f.name),
                self.default_value(f)?
            );
        }
        out.push_str("                unknown_tagged_fields: ::std::collections::BTreeMap::new(),\n            }\n        }\n    }\n\n");
        Ok(())
    }

    fn emit_encode(&self, out: &mut String) -> Result<(), CodegenError> {
        let s = self.strukt;
        let mut enc = String::new();
        let mut size = String::new();
        self.encode_untagged_fields(&mut enc, &mut size)?;
        self.encode_tagged_fields(&mut enc, &mut size)?;
        let untagged_err = format!(
            "        }} else if !self.unknown_tagged_fields.is_empty() {{\n            return Err(::anyhow::anyhow!(\"{}: tagged fields need a flexible version, not {{version}}\"));\n        }}\n",
            s.name
        );
        enc.push_str(&untagged_err);
        size.push_str(&untagged_err);

        let flex = self.flexible_test();
        let _ = writeln!(
            out,
            "    impl {KP}::Encodable for {name} {{\n        fn encode<B: {KP}::buf::ByteBufMut>(&self, buf: &mut B, version: i16) -> ::anyhow::Result<()> {{\n            let flexible = {flex};\n{enc}            Ok(())\n        }}\n\n        fn compute_size(&self, version: i16) -> ::anyhow::Result<usize> {{\n            let flexible = {flex};\n            let mut total = 0usize;\n{size}            Ok(total)\n        }}\n    }}\n",
            name = s.name,
            enc = indent(&enc, 4),
            size = indent(&size, 4),
        );
        Ok(())
    }

    /// The bodies of `encode` (`enc`) and `compute_size` (`size`) for the fields outside the
    /// tagged section, each refusing a value its version cannot carry unless it is ignorable.
    fn encode_untagged_fields(
        &self,
        enc: &mut String,
        size: &mut String,
    ) -> Result<(), CodegenError> {
        let s = self.strukt;
        for f in &s.fields {
            let id = field_ident(&f.name);
            let present = f.versions.test("version");
            let not_default = format!("!({})", self.is_default(f, &format!("self.{id}"))?);
            let reject = if f.ignorable {
                String::new()
            } else {
                format!(
                    "        if !({present}) && {not_default} {{ return Err(crate::codec::unsupported_field({:?}, {:?}, version)); }}\n",
                    s.name, f.name
                )
            };
            enc.push_str(&reject);
            size.push_str(&reject);
            if f.tagged.is_some() {
                continue;
            }
            let fx = self.field_flex(f);
            let _ = writeln!(
                enc,
                "        if {present} {{\n{}        }}",
                self.write_field(f, &fx, "            ")
            );
            let _ = writeln!(
                size,
                "        if {present} {{\n            total += {};\n        }}",
                self.size_field(f, &fx)
            );
        }
        Ok(())
    }

    /// The tagged section of `encode` (`enc`) and `compute_size` (`size`): known tags and
    /// unknown ones interleaved in tag order. Leaves the `if flexible` block open.
    fn encode_tagged_fields(
        &self,
        enc: &mut String,
        size: &mut String,
    ) -> Result<(), CodegenError> {
        let mut tagged: Vec<&Field> = self
            .strukt
            .fields
            .iter()
            .filter(|f| f.tagged.is_some())
            .collect();
        tagged.sort_by_key(|f| f.tagged.map(|(tag, _)| tag));
        let _ = writeln!(
            enc,
            "        if flexible {{\n            let mut count = self.unknown_tagged_fields.len();"
        );
        let _ = writeln!(
            size,
            "        if flexible {{\n            let mut count = self.unknown_tagged_fields.len();"
        );
        for f in &tagged {
            let id = field_ident(&f.name);
            let cond = format!(
                "({}) && !({})",
                f.versions.test("version"),
                self.is_default(f, &format!("self.{id}"))?
            );
            let _ = writeln!(
                enc,
                "            let has_{id} = {cond};\n            if has_{id} {{ count += 1; }}"
            );
            let _ = writeln!(
                size,
                "            let has_{id} = {cond};\n            if has_{id} {{ count += 1; }}"
            );
        }
        enc.push_str("            crate::codec::write_uvarint(buf, count as u32);\n");
        size.push_str("            total += crate::codec::uvarint_size(count as u32) + crate::codec::unknown_tagged_size(&self.unknown_tagged_fields);\n");
        let mut lower = "i32::MIN".to_string();
        for f in &tagged {
            let id = field_ident(&f.name);
            let tag = f.tagged.map(|(t, _)| t).unwrap_or_default();
            let _ = writeln!(enc, "            crate::codec::write_unknown_tagged(buf, &self.unknown_tagged_fields, {lower}..{tag})?;");
            let sz = self.size_field(f, "true");
            let _ = writeln!(
                enc,
                "            if has_{id} {{\n                crate::codec::write_uvarint(buf, {tag});\n                let size = {sz};\n                crate::codec::write_uvarint(buf, size as u32);\n{}            }}",
                self.write_field(f, "true", "                ")
            );
            // In a version without this field, its tag arrives as an unknown one: written back
            // in its place (counted and sized with the other unknown tags).
            let _ = writeln!(enc, "            crate::codec::write_unknown_tagged(buf, &self.unknown_tagged_fields, {tag}..={tag})?;");
            let _ = writeln!(
                size,
                "            if has_{id} {{\n                let size = {sz};\n                total += crate::codec::uvarint_size({tag}) + crate::codec::uvarint_size(size as u32) + size;\n            }}"
            );
            lower = format!("{}", tag + 1);
        }
        let _ = writeln!(enc, "            crate::codec::write_unknown_tagged(buf, &self.unknown_tagged_fields, {lower}..)?;");
        Ok(())
    }

    fn emit_decode(&self, out: &mut String) -> Result<(), CodegenError> {
        let s = self.strukt;
        let mut body = String::new();
        for f in &s.fields {
            let id = field_ident(&f.name);
            let default = self.default_value(f)?;
            if f.tagged.is_some() {
                let _ = writeln!(body, "        let mut f_{} = {default};", strip_raw(&id));
                continue;
            }
            let fx = self.field_flex(f);
            let _ = writeln!(
                body,
                "        let f_{} = if {} {{\n            {}\n        }} else {{\n            {default}\n        }};",
                strip_raw(&id),
                f.versions.test("version"),
                self.read_field(f, &fx, "buf")
            );
        }
        body.push_str(
            "        let mut unknown_tagged_fields = ::std::collections::BTreeMap::new();\n",
        );
        body.push_str("        if flexible {\n            let count = crate::codec::read_uvarint(buf)?;\n            for _ in 0..count {\n");
        body.push_str("                let tag = crate::codec::read_uvarint(buf)?;\n                let size = crate::codec::read_uvarint(buf)? as usize;\n                let mut data = crate::codec::take(buf, size)?;\n                match tag {\n");
        for f in s.fields.iter().filter(|f| f.tagged.is_some()) {
            let id = field_ident(&f.name);
            let tag = f.tagged.map(|(t, _)| t).unwrap_or_default();
            let _ = writeln!(
                body,
                "                    {tag} if {} => {{ f_{} = {}; }}",
                f.versions.test("version"),
                strip_raw(&id),
                self.read_field(f, "true", "&mut data")
            );
        }
        body.push_str("                    _ => crate::codec::insert_unknown_tagged(&mut unknown_tagged_fields, tag, data)?,\n                }\n            }\n        }\n");
        let mut fields = String::new();
        for f in &s.fields {
            let id = field_ident(&f.name);
            let _ = write!(fields, "{id}: f_{}, ", strip_raw(&id));
        }
        let _ = writeln!(
            out,
            "    impl {KP}::Decodable for {name} {{\n        fn decode<B: {KP}::buf::ByteBuf>(buf: &mut B, version: i16) -> ::anyhow::Result<Self> {{\n            let flexible = {flex};\n{body}            Ok(Self {{ {fields}unknown_tagged_fields }})\n        }}\n    }}\n",
            name = s.name,
            flex = self.flexible_test(),
            body = indent(&body, 4),
        );
        Ok(())
    }

    /// The fewest bytes one value can take on the wire at a version: an array of these checks
    /// its declared count against the input before it allocates.
    fn emit_min_wire_size(&self, out: &mut String) {
        let s = self.strukt;
        let mut body = String::new();
        for f in s.fields.iter().filter(|f| f.tagged.is_none()) {
            let fx = self.field_flex(f);
            let min = if self.nullable(f) {
                match &f.ty {
                    FieldType::Struct(_) => "1".to_string(),
                    other => min_size_value(other, &fx),
                }
            } else {
                min_size_value(&f.ty, &fx)
            };
            let _ = writeln!(
                body,
                "            if {} {{ total += {min}; }}",
                f.versions.test("version")
            );
        }
        let _ = writeln!(
            out,
            "    impl {name} {{\n        /// The fewest bytes a value takes on the wire at `version`.\n        #[doc(hidden)]\n        pub fn min_wire_size(version: i16) -> usize {{\n            let flexible = {flex};\n            let mut total = 0usize;\n{body}            if flexible {{ total += 1; }}\n            total\n        }}\n    }}\n",
            name = s.name,
            flex = self.flexible_test(),
        );
    }

    fn emit_arbitrary(&self, out: &mut String) {
        let s = self.strukt;
        let mut body = String::new();
        for f in &s.fields {
            let id = field_ident(&f.name);
            let _ = writeln!(
                body,
                "            if {} {{ v.{id} = {}; }}",
                f.versions.test("version"),
                self.arbitrary_field(f)
            );
        }
        let next_tag = s
            .fields
            .iter()
            .filter_map(|f| f.tagged.map(|(t, _)| t))
            .max()
            .map_or(0, |t| t + 1);
        let _ = writeln!(
            out,
            "    #[cfg(any(test, feature = \"arbitrary\"))]\n    impl {name} {{\n        /// A random value that version `version` can carry, for property tests.\n        pub fn arbitrary<R: ::rand::Rng + ?Sized>(rng: &mut R, version: i16) -> Self {{\n            let flexible = {flex};\n            let mut v = Self::default();\n{body}            if flexible && rng.random_ratio(1, 4) {{\n                v.unknown_tagged_fields.insert({next_tag} + rng.random_range(0..3), crate::codec::arbitrary_bytes(rng));\n            }}\n            v\n        }}\n    }}\n",
            name = s.name,
            flex = self.flexible_test(),
        );
    }
}

fn strip_raw(id: &str) -> &str {
    id.strip_prefix("r#").unwrap_or(id)
}

fn indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    s.lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_string()
            } else {
                format!("{pad}{l}\n")
            }
        })
        .collect()
}
