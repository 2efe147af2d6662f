//! Typed readers for property values. Each returns a message that the caller wraps with the
//! file, line and key. Numbers and booleans are trimmed first, as Kafka's `ConfigDef` does.

use std::fmt::Display;
use std::str::FromStr;

/// Parses an integer of type `T` within `[min, max]`.
pub fn int_in<T>(raw: &str, min: T, max: T) -> Result<T, String>
where
    T: FromStr + PartialOrd + Display + Copy + Bounded,
{
    let Ok(v) = raw.trim().parse::<T>() else {
        return Err(format!(
            "expected {}, got \"{}\"",
            describe_range(min, max),
            raw
        ));
    };
    if v < min || v > max {
        return Err(format!("expected {}, got {}", describe_range(min, max), v));
    }
    Ok(v)
}

/// Kafka says "positive" for `atLeast(1)` and spells out other bounds.
fn describe_range<T: Display + PartialOrd + Copy + Bounded>(min: T, max: T) -> String {
    let unbounded_above = max == T::MAX;
    if min == T::ONE && unbounded_above {
        "a positive integer".to_owned()
    } else if min == T::ZERO && unbounded_above {
        "a non-negative integer".to_owned()
    } else if min == T::MIN && unbounded_above {
        "an integer".to_owned()
    } else if unbounded_above {
        format!("an integer of at least {min}")
    } else {
        format!("an integer between {min} and {max}")
    }
}

/// The constants [`int_in`] needs to describe a range.
pub trait Bounded {
    const MIN: Self;
    const MAX: Self;
    const ZERO: Self;
    const ONE: Self;
}

impl Bounded for i16 {
    const MIN: Self = i16::MIN;
    const MAX: Self = i16::MAX;
    const ZERO: Self = 0;
    const ONE: Self = 1;
}

impl Bounded for i32 {
    const MIN: Self = i32::MIN;
    const MAX: Self = i32::MAX;
    const ZERO: Self = 0;
    const ONE: Self = 1;
}

impl Bounded for i64 {
    const MIN: Self = i64::MIN;
    const MAX: Self = i64::MAX;
    const ZERO: Self = 0;
    const ONE: Self = 1;
}

/// `true` / `false`, any case, as Kafka's BOOLEAN type.
pub fn boolean(raw: &str) -> Result<bool, String> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("expected true or false, got \"{raw}\"")),
    }
}

/// A comma-separated list with blanks around items removed; empty text is the empty list.
/// Empty items (`a,,b`) are refused because they are always a typo.
pub fn list(raw: &str) -> Result<Vec<String>, String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    let items: Vec<String> = trimmed.split(',').map(|s| s.trim().to_owned()).collect();
    if items.iter().any(String::is_empty) {
        return Err(format!("empty item in comma-separated list \"{raw}\""));
    }
    Ok(items)
}

/// A list in which no item may appear twice.
pub fn unique_list(raw: &str) -> Result<Vec<String>, String> {
    let items = list(raw)?;
    for (i, item) in items.iter().enumerate() {
        if items[..i].contains(item) {
            return Err(format!("\"{item}\" appears more than once"));
        }
    }
    Ok(items)
}

/// An optional string: blank means unset.
pub fn optional_string(raw: &str) -> Option<String> {
    let trimmed = raw.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(int_in(" 42 ", 1, i32::MAX), Ok(42));
        assert_eq!(
            int_in("abc", 1, i32::MAX),
            Err("expected a positive integer, got \"abc\"".to_owned())
        );
        assert_eq!(
            int_in("0", 1, i32::MAX),
            Err("expected a positive integer, got 0".to_owned())
        );
        assert_eq!(
            int_in("-1", 0, i32::MAX),
            Err("expected a non-negative integer, got -1".to_owned())
        );
        assert_eq!(
            int_in("2147483648", 0, i32::MAX),
            Err("expected a non-negative integer, got \"2147483648\"".to_owned())
        );
        assert_eq!(
            int_in("7", 45000, 60000),
            Err("expected an integer between 45000 and 60000, got 7".to_owned())
        );
        assert_eq!(
            int_in("7", 15000, i32::MAX),
            Err("expected an integer of at least 15000, got 7".to_owned())
        );
        assert_eq!(int_in("-5", i64::MIN, i64::MAX), Ok(-5i64));
        assert_eq!(
            int_in("1.5", i32::MIN, i32::MAX),
            Err("expected an integer, got \"1.5\"".to_owned())
        );
    }

    #[test]
    fn booleans() {
        assert_eq!(boolean(" TRUE "), Ok(true));
        assert_eq!(boolean("False"), Ok(false));
        assert!(boolean("yes").is_err());
        assert!(boolean("").is_err());
    }

    #[test]
    fn lists() {
        assert_eq!(list(""), Ok(vec![]));
        assert_eq!(list("  "), Ok(vec![]));
        assert_eq!(
            list(" a , b ,c"),
            Ok(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()])
        );
        assert!(list("a,,b").is_err());
        assert!(list("a,").is_err());
        assert!(unique_list("a,b,a").is_err());
        assert_eq!(unique_list("a,b"), Ok(vec!["a".to_owned(), "b".to_owned()]));
    }

    #[test]
    fn optional_strings() {
        assert_eq!(optional_string("  "), None);
        assert_eq!(optional_string(" x.Y "), Some("x.Y".to_owned()));
    }
}
