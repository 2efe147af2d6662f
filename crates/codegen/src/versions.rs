//! Version ranges as written in schemas: "0+", "1-3", "3", "none".

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    pub min: i16,
    pub max: i16,
}

impl Versions {
    pub const NONE: Versions = Versions { min: 1, max: 0 };

    pub fn parse(s: &str) -> Result<Versions, String> {
        let s = s.trim();
        let num = |t: &str| {
            t.trim()
                .parse::<i16>()
                .map_err(|_| format!("bad version range {s:?}"))
        };
        if s == "none" {
            Ok(Versions::NONE)
        } else if let Some(min) = s.strip_suffix('+') {
            Ok(Versions {
                min: num(min)?,
                max: i16::MAX,
            })
        } else if let Some((a, b)) = s.split_once('-') {
            let v = Versions {
                min: num(a)?,
                max: num(b)?,
            };
            if v.is_empty() {
                return Err(format!("empty version range {s:?}"));
            }
            Ok(v)
        } else {
            let v = num(s)?;
            Ok(Versions { min: v, max: v })
        }
    }

    pub fn is_empty(&self) -> bool {
        self.min > self.max
    }

    pub fn contains(&self, v: i16) -> bool {
        v >= self.min && v <= self.max
    }

    pub fn contains_all(&self, other: &Versions) -> bool {
        other.is_empty() || (self.min <= other.min && other.max <= self.max)
    }

    pub fn overlaps(&self, other: &Versions) -> bool {
        !self.is_empty() && !other.is_empty() && self.min <= other.max && other.min <= self.max
    }

    pub fn intersect(&self, other: &Versions) -> Versions {
        Versions {
            min: self.min.max(other.min),
            max: self.max.min(other.max),
        }
    }

    /// A Rust boolean expression testing `var` against this range.
    pub fn test(&self, var: &str) -> String {
        if self.is_empty() {
            "false".to_string()
        } else if self.min == self.max {
            format!("{var} == {}", self.min)
        } else if self.max == i16::MAX {
            if self.min <= 0 {
                "true".to_string()
            } else {
                format!("{var} >= {}", self.min)
            }
        } else if self.min <= 0 {
            format!("{var} <= {}", self.max)
        } else {
            format!("({var} >= {} && {var} <= {})", self.min, self.max)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!(
            Versions::parse("0+").unwrap(),
            Versions {
                min: 0,
                max: i16::MAX
            }
        );
        assert_eq!(Versions::parse("1-3").unwrap(), Versions { min: 1, max: 3 });
        assert_eq!(Versions::parse("3").unwrap(), Versions { min: 3, max: 3 });
        assert!(Versions::parse("none").unwrap().is_empty());
        assert!(Versions::parse("3-1").is_err());
        assert!(Versions::parse("x").is_err());
    }

    #[test]
    fn tests_render_as_rust() {
        assert_eq!(Versions::parse("0+").unwrap().test("v"), "true");
        assert_eq!(Versions::parse("2+").unwrap().test("v"), "v >= 2");
        assert_eq!(
            Versions::parse("1-3").unwrap().test("v"),
            "(v >= 1 && v <= 3)"
        );
        assert_eq!(Versions::parse("0-3").unwrap().test("v"), "v <= 3");
        assert_eq!(Versions::NONE.test("v"), "false");
    }
}
