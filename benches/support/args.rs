//! Flag value parsers shared by the load benches (`load`, `data_plane`).
#![allow(dead_code)] // each bench uses its own part

/// A comma-separated, non-empty list of values.
pub fn list<T>(value: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    let items = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse)
        .collect::<Result<Vec<_>, _>>()?;
    if items.is_empty() {
        return Err(format!("empty list {value:?}"));
    }
    Ok(items)
}

pub fn positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("expected a positive integer, got {s:?}")),
    }
}

pub fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=3600.0).contains(&x) => Ok(x),
        _ => Err(format!("expected seconds between 0 and 3600, got {s:?}")),
    }
}
