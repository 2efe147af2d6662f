//! A group config's value: parsed from its text as Kafka's `ConfigDef.parseType` parses it,
//! then checked by the key's validator.

use super::Check::{self, AtLeast, OneOf};
use super::{ConfigType, Def};

/// A parsed value (`ConfigDef.parseType`).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Bool(bool),
    Str(String),
    Int(i32),
    Long(i64),
    List(Vec<String>),
}

impl Value {
    /// `ConfigDef.convertToString`.
    pub(super) fn to_kafka_string(&self) -> String {
        match self {
            Value::Bool(b) => b.to_string(),
            Value::Str(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Long(l) => l.to_string(),
            Value::List(l) => l.join(","),
        }
    }
}

/// Java's `String.trim`: strips every char up to U+0020 at both ends.
pub(super) fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// `ConfigDef.parseType` then the key's validator; the error is `ConfigException`'s message.
pub(super) fn parse(d: &Def, raw: &str) -> Result<Value, String> {
    let invalid = |why: &str| format!("Invalid value {raw} for configuration {}: {why}", d.name);
    let trimmed = java_trim(raw);
    let value = match d.kind {
        ConfigType::Boolean => {
            if trimmed.eq_ignore_ascii_case("true") {
                Value::Bool(true)
            } else if trimmed.eq_ignore_ascii_case("false") {
                Value::Bool(false)
            } else {
                return Err(invalid("Expected value to be either true or false"));
            }
        }
        ConfigType::String => Value::Str(trimmed.to_owned()),
        ConfigType::Int => Value::Int(
            trimmed
                .parse::<i32>()
                .map_err(|_| invalid("Not a number of type INT"))?,
        ),
        ConfigType::Long => Value::Long(
            trimmed
                .parse::<i64>()
                .map_err(|_| invalid("Not a number of type LONG"))?,
        ),
        ConfigType::List => Value::List(split_list(trimmed)),
    };
    match (d.check, &value) {
        (AtLeast(min), Value::Int(v)) if i64::from(*v) < min => {
            Err(invalid(&format!("Value must be at least {min}")))
        }
        (AtLeast(min), Value::Long(v)) if *v < min => {
            Err(invalid(&format!("Value must be at least {min}")))
        }
        (OneOf(allowed), Value::Str(s)) if !allowed.contains(&s.as_str()) => Err(invalid(
            &format!("String must be one of: {}", allowed.join(", ")),
        )),
        (Check::AutoOffsetReset, Value::Str(s)) if !is_auto_offset_reset(s) => {
            Err(invalid(&format!(
                "Invalid value `{s}` for configuration {}. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
                d.name
            )))
        }
        _ => Ok(value),
    }
}

/// `ConfigDef`'s LIST parsing: split on commas with the blanks around them.
pub(super) fn split_list(trimmed: &str) -> Vec<String> {
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed
        .split(',')
        .map(|s| java_trim(s).to_owned())
        .collect()
}

/// `ShareGroupAutoOffsetResetStrategy.fromString`: `earliest`, `latest` (any case) or
/// `by_duration:` and a non-negative ISO-8601 duration (`PnDTnHnMn.nS`).
fn is_auto_offset_reset(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    if lower == "earliest" || lower == "latest" {
        return true;
    }
    let Some(duration) = lower.strip_prefix("by_duration:") else {
        return false;
    };
    is_non_negative_iso_duration(duration)
}

/// A `java.time.Duration.parse` form with no negative part: `P[nD][T[nH][nM][n[.n]S]]`, at
/// least one part, each `n` a plain number.
fn is_non_negative_iso_duration(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('p') else {
        return false;
    };
    let (days, time) = match rest.split_once('t') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut parts = 0;
    let number = |n: &str, fraction: bool| {
        let (int, frac) = match n.split_once('.') {
            Some((i, f)) if fraction => (i, Some(f)),
            _ => (n, None),
        };
        !int.is_empty()
            && int.bytes().all(|b| b.is_ascii_digit())
            && frac.is_none_or(|f| {
                !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit())
            })
    };
    if !days.is_empty() {
        let Some(n) = days.strip_suffix('d') else {
            return false;
        };
        if !number(n, false) {
            return false;
        }
        parts += 1;
    }
    if let Some(mut t) = time {
        if t.is_empty() {
            return false;
        }
        for (unit, fraction) in [('h', false), ('m', false), ('s', true)] {
            if let Some(i) = t.find(unit) {
                if !number(&t[..i], fraction) {
                    return false;
                }
                parts += 1;
                t = &t[i + 1..];
            }
        }
        if !t.is_empty() {
            return false;
        }
    }
    parts > 0
}
