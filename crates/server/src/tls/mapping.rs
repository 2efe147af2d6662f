//! `ssl.principal.mapping.rules`: from a client certificate's subject (RFC 2253, `dn.rs`) to
//! the principal's name, as Kafka's `SslPrincipalMapper` does it (docs/kafka-security-facts.md
//! §4.2).
//!
//! The rule list is split and parsed with Kafka's own patterns. A rule `RULE:pattern/replacement/`
//! applies when its pattern matches the **whole** DN; the name is then the DN with every match of
//! the pattern replaced (Java's `replaceAll`, whose find loop and `$n`/`${name}`/`\x` replacement
//! syntax are followed here, including Kafka's rule that a `$n` past the pattern's group count
//! is literal), lower- or upper-cased with `/L` or `/U`. The first rule that applies wins;
//! `DEFAULT` is the DN itself.
//!
//! Patterns are compiled by the `regex` crate, not `java.util.regex`. The common syntax is the
//! same; the differences (config/README.md): no look-around, back-references in the pattern,
//! possessive quantifiers or `\Q…\E` (such a rule is a configuration error), and `\w`, `\d`,
//! `\s`, `\b` and case-insensitive matching are Unicode-aware (Java: ASCII unless `(?U)`), which
//! only matters for non-ASCII DNs.

use std::fmt;
use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::pem::{JAVA_DOT, JAVA_SPACE};

/// Kafka's `RULE_PATTERN`, with Java's `.` and `\s` spelled out for the regex crate. Groups: 1
/// DEFAULT, 2 the pattern, 4 the replacement, 6 the case flag, 7 anything else.
fn rule_pattern() -> String {
    let dot = JAVA_DOT;
    format!(r"(DEFAULT)|RULE:((\\{dot}|[^\\/])*)/((\\{dot}|[^\\/])*)/([LU]?){dot}*?|({dot}*?)")
}

static SPLITTER: LazyLock<Regex> = LazyLock::new(|| {
    let s = JAVA_SPACE;
    compile_fixed(&format!("{s}*({}){s}*(,{s}*|$)", rule_pattern()))
});
static PARSER: LazyLock<Regex> =
    LazyLock::new(|| compile_fixed(&format!(r"\A(?:{})", rule_pattern())));
static BACK_REFERENCE: LazyLock<Regex> = LazyLock::new(|| compile_fixed(r"\$([0-9]+)"));

fn compile_fixed(pattern: &str) -> Regex {
    // Fixed text, checked by the tests: it compiles or no rule could ever be read.
    Regex::new(pattern).unwrap_or_else(|e| panic!("pattern {pattern}: {e}"))
}

/// The parsed rules.
#[derive(Clone)]
pub struct PrincipalMapper {
    text: String,
    rules: Vec<Rule>,
}

#[derive(Clone)]
enum Rule {
    Default,
    Replace {
        /// The pattern alone (for `replaceAll`) and anchored at both ends (for `matches`).
        pattern: Regex,
        whole: Regex,
        /// As written, and after Kafka's escaping of back-references past the group count.
        written: String,
        replacement: String,
        case: Case,
    },
}

/// Kafka's `Rule.toString`.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Default => f.write_str("DEFAULT"),
            Rule::Replace {
                pattern,
                written,
                case,
                ..
            } => {
                write!(f, "RULE:{}/{written}", pattern.as_str())?;
                match case {
                    Case::Keep => Ok(()),
                    Case::Lower => f.write_str("/L"),
                    Case::Upper => f.write_str("/U"),
                }
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// Why no name came out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// Kafka's message (`DefaultKafkaPrincipalBuilder`).
    #[error("Failed to map name for '{0}' based on SSL principal mapping rules.")]
    NoMatchingRule(String),
    /// A rule matched but its replacement is malformed (Java throws from `replaceAll`).
    #[error("rule {rule} matched '{dn}' but its replacement failed: {reason}")]
    Replacement {
        rule: String,
        dn: String,
        reason: String,
    },
}

impl PartialEq for PrincipalMapper {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

/// Kafka's `SslPrincipalMapper.toString`: `SslPrincipalMapper(rules = [RULE:…, DEFAULT])`.
impl fmt::Debug for PrincipalMapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SslPrincipalMapper(rules = [")?;
        for (i, rule) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{rule}")?;
        }
        f.write_str("])")
    }
}

impl Default for PrincipalMapper {
    fn default() -> Self {
        PrincipalMapper {
            text: "DEFAULT".to_owned(),
            rules: vec![Rule::Default],
        }
    }
}

impl PrincipalMapper {
    /// Parses a rule list; the error is Kafka's "Invalid rule" message (or the regex crate's
    /// reason for refusing a pattern).
    pub fn parse(text: &str) -> Result<PrincipalMapper, String> {
        let trimmed = text.trim_matches(|c: char| c <= ' ');
        let mut rules = Vec::new();
        for caps in SPLITTER.captures_iter(trimmed) {
            let rule = caps.get(1).map_or("", |m| m.as_str());
            if let Some(parsed) = parse_rule(rule)? {
                rules.push(parsed);
            }
        }
        Ok(PrincipalMapper {
            text: text.to_owned(),
            rules,
        })
    }

    /// The name for this DN: the first rule that applies.
    pub fn name(&self, dn: &str) -> Result<String, MapError> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(dn.to_owned()),
                Rule::Replace {
                    pattern,
                    whole,
                    replacement,
                    case,
                    ..
                } => {
                    if !whole.is_match(dn) {
                        continue;
                    }
                    let name = replace_all(pattern, dn, replacement).map_err(|reason| {
                        MapError::Replacement {
                            rule: pattern.as_str().to_owned(),
                            dn: dn.to_owned(),
                            reason,
                        }
                    })?;
                    return Ok(match case {
                        Case::Keep => name,
                        Case::Lower => name.to_lowercase(),
                        Case::Upper => name.to_uppercase(),
                    });
                }
            }
        }
        Err(MapError::NoMatchingRule(dn.to_owned()))
    }
}

fn parse_rule(rule: &str) -> Result<Option<Rule>, String> {
    let Some(caps) = PARSER.captures(rule) else {
        return Err(format!("Invalid rule: {rule}"));
    };
    let end = caps.get(0).map_or(0, |m| m.end());
    if end != rule.len() {
        return Err(format!(
            "Invalid rule: `{rule}`, unmatched substring: `{}`",
            &rule[end..]
        ));
    }
    if caps.get(1).is_some() {
        return Ok(Some(Rule::Default));
    }
    let Some(pattern_text) = caps.get(2) else {
        return Ok(None); // an empty rule is ignored
    };
    let pattern_text = pattern_text.as_str();
    let invalid = |e: regex::Error| format!("Invalid rule: `{rule}`: {e}");
    // Compiled alone first, so wrapping it below cannot change how it groups.
    let pattern = Regex::new(pattern_text).map_err(invalid)?;
    let whole = Regex::new(&format!(r"\A(?:{pattern_text})\z")).map_err(invalid)?;
    let replacement = caps.get(4).map_or("", |m| m.as_str());
    let case = match caps.get(6).map(|m| m.as_str()) {
        Some("L") => Case::Lower,
        Some("U") => Case::Upper,
        _ => Case::Keep,
    };
    let groups = pattern.captures_len() - 1;
    Ok(Some(Rule::Replace {
        pattern,
        whole,
        written: replacement.to_owned(),
        replacement: escape_literal_back_references(replacement, groups),
        case,
    }))
}

/// Kafka's `escapeLiteralBackReferences` (from NiFi): a `$n` naming a group the pattern does not
/// have (after dropping trailing digits, as Java's replacement parser reads them) gets a `\`
/// so it stays literal. Kept index for index, including its use of the original string's
/// positions after an insertion.
fn escape_literal_back_references(unescaped: &str, groups: usize) -> String {
    if groups == 0 {
        return unescaped.to_owned();
    }
    let original = unescaped;
    let mut value: Vec<char> = unescaped.chars().collect();
    for caps in BACK_REFERENCE.captures_iter(original) {
        let Some(digits) = caps.get(1) else { continue };
        if digits.as_str().starts_with('0') {
            continue;
        }
        let mut index: u128 = digits.as_str().parse().unwrap_or(u128::MAX);
        while index > groups as u128 && index >= 10 {
            index /= 10;
        }
        if index > groups as u128 {
            // Java indexes in chars of the original string while editing the copy.
            let group_start = original[..digits.start()].chars().count();
            let at = (group_start - 1).min(value.len());
            value.insert(at, '\\');
        }
    }
    value.into_iter().collect()
}

/// Java's `Matcher.replaceAll`: every match from left to right, an empty match allowed right
/// after a non-empty one, the search moving one character on after an empty match.
fn replace_all(pattern: &Regex, text: &str, replacement: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let (mut from, mut copied) = (0usize, 0usize);
    while from <= text.len() {
        let Some(caps) = pattern.captures_at(text, from) else {
            break;
        };
        let Some(m) = caps.get(0) else { break };
        out.push_str(&text[copied..m.start()]);
        expand(&caps, pattern, replacement, &mut out)?;
        copied = m.end();
        from = if m.is_empty() {
            match text[m.end()..].chars().next() {
                Some(c) => m.end() + c.len_utf8(),
                None => break,
            }
        } else {
            m.end()
        };
    }
    out.push_str(&text[copied..]);
    Ok(out)
}

/// Java's `appendReplacement` syntax: `\x` is `x`, `$n` the longest group number that exists,
/// `${name}` a named group; anything else is literal.
fn expand(
    caps: &Captures<'_>,
    pattern: &Regex,
    replacement: &str,
    out: &mut String,
) -> Result<(), String> {
    let groups = pattern.captures_len() - 1;
    let chars: Vec<char> = replacement.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                i += 1;
                let c = chars.get(i).ok_or("character to be escaped is missing")?;
                out.push(*c);
                i += 1;
            }
            '$' => {
                i += 1;
                let first = *chars
                    .get(i)
                    .ok_or("Illegal group reference: group index is missing")?;
                if first == '{' {
                    let close = chars[i..]
                        .iter()
                        .position(|c| *c == '}')
                        .ok_or("named capturing group is missing trailing '}'")?;
                    let name: String = chars[i + 1..i + close].iter().collect();
                    if pattern.capture_names().flatten().all(|n| n != name) {
                        return Err(format!("No group with name {{{name}}}"));
                    }
                    if let Some(g) = caps.name(&name) {
                        out.push_str(g.as_str());
                    }
                    i += close + 1;
                    continue;
                }
                let mut number = first.to_digit(10).ok_or("Illegal group reference")? as usize;
                i += 1;
                while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                    let longer = number.saturating_mul(10).saturating_add(d as usize);
                    if longer > groups {
                        break;
                    }
                    number = longer;
                    i += 1;
                }
                if number > groups {
                    return Err(format!("No group {number}"));
                }
                if let Some(g) = caps.get(number) {
                    out.push_str(g.as_str());
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(rules: &str, dn: &str) -> Result<String, MapError> {
        PrincipalMapper::parse(rules).unwrap().name(dn)
    }

    /// Kafka's `SslPrincipalMapperTest.testSslPrincipalMapper` and `testCommaWithWhitespace`.
    #[test]
    fn kafkas_rules_give_kafkas_names() {
        let rules = [
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
            "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
            "DEFAULT",
        ]
        .join(", ");
        for (dn, expected) in [
            ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
            ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
            ("cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
            ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
            (
                "OU=JavaSoft,O=Sun Microsystems,C=US",
                "OU=JavaSoft,O=Sun Microsystems,C=US",
            ),
        ] {
            assert_eq!(name(&rules, dn).as_deref(), Ok(expected), "{dn}");
        }
        assert_eq!(
            name(
                r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT",
                r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz"
            )
            .as_deref(),
            Ok(r"Tkac\, Adam")
        );
        assert_eq!(name("DEFAULT", "CN=x").as_deref(), Ok("CN=x"));
        assert_eq!(
            name("RULE:^CN=(.*?),OU=(.*?)$/$1/L,DEFAULT", "CN=Alice,OU=Eng").as_deref(),
            Ok("alice")
        );
    }

    #[test]
    fn commas_escapes_and_blank_space_in_rule_lists() {
        // A comma inside a pattern belongs to the rule; whitespace around rules is dropped.
        let rules = "  RULE:^CN=([^,]*),O=x$/$1/ ,\n RULE:^CN=a\\/b$/slash/  , DEFAULT ";
        assert_eq!(name(rules, "CN=bob,O=x").as_deref(), Ok("bob"));
        assert_eq!(name(rules, "CN=a/b").as_deref(), Ok("slash"));
        assert_eq!(name(rules, "CN=c").as_deref(), Ok("CN=c"));
        // Replacement escapes: `\$` is a literal dollar.
        assert_eq!(name("RULE:^CN=(.*)$/\\$$1/", "CN=z").as_deref(), Ok("$z"));
    }

    #[test]
    fn no_matching_rule_is_kafkas_failure() {
        assert_eq!(
            name("RULE:^CN=(.*)$/$1/", "OU=x").unwrap_err().to_string(),
            "Failed to map name for 'OU=x' based on SSL principal mapping rules."
        );
        // An empty list has no rule at all.
        assert!(matches!(name("", "CN=x"), Err(MapError::NoMatchingRule(_))));
    }

    /// `SslPrincipalMapperTest.testValidRules`, `testInvalidRules` and `testRulesSplitting`.
    #[test]
    fn kafkas_rule_lists_split_and_parse_as_in_kafka() {
        for valid in [
            "DEFAULT",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
            "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
            "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
            "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
        ] {
            assert!(PrincipalMapper::parse(valid).is_ok(), "{valid}");
        }
        for invalid in [
            "default",
            "DEFAUL",
            "DEFAULT/L",
            "DEFAULT/U",
            "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
            "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
        ] {
            assert!(PrincipalMapper::parse(invalid).is_err(), "{invalid}");
        }
        for (expected, rules) in [
            ("[]", ""),
            ("[DEFAULT]", "DEFAULT"),
            ("[RULE:/]", "RULE://"),
            ("[RULE:/.*]", "RULE:/.*/"),
            ("[RULE:/.*/L]", "RULE:/.*/L"),
            ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
            ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
            (
                "[RULE:   /     , DEFAULT]",
                "  RULE:   /     / ,  DEFAULT  ",
            ),
            (
                "[RULE:  /     /U, DEFAULT]",
                "  RULE:  /     /U   ,DEFAULT  ",
            ),
            (
                "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
                "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
            ),
            ("[]", ",   , , ,      , , ,   "),
            ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
            (
                "[RULE: /   , DEFAULT]",
                ",  , RULE: /   /    ,,,   DEFAULT, ,   ",
            ),
            (
                "[RULE:   /  /U, DEFAULT]",
                "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,",
            ),
            (r"[RULE:\/\\\(\)\n\t/\/\/]", r"RULE:\/\\\(\)\n\t/\/\//"),
            (
                r"[RULE:\**\/+/*/L, RULE:\/*\**/**]",
                r"RULE:\**\/+/*/L,RULE:\/*\**/**/",
            ),
            (
                r"[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
                r"RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
            ),
        ] {
            let mapper = PrincipalMapper::parse(rules).unwrap_or_else(|e| panic!("{rules}: {e}"));
            assert_eq!(
                format!("{mapper:?}"),
                format!("SslPrincipalMapper(rules = {expected})"),
                "{rules}"
            );
        }
    }

    #[test]
    fn malformed_rules_are_refused_with_kafkas_message() {
        for (rules, message) in [
            (
                "DEFAULTS",
                "Invalid rule: `DEFAULTS`, unmatched substring: `S`",
            ),
            (
                "RULE:a/b/Lx",
                "Invalid rule: `RULE:a/b/Lx`, unmatched substring: `x`",
            ),
            (
                "RULE:a/b",
                "Invalid rule: `RULE:a/b`, unmatched substring: `RULE:a/b`",
            ),
            ("foo", "Invalid rule: `foo`, unmatched substring: `foo`"),
        ] {
            assert_eq!(
                PrincipalMapper::parse(rules).err().as_deref(),
                Some(message),
                "{rules}"
            );
        }
        // A pattern the regex crate cannot compile (look-ahead) is refused at startup.
        let e = PrincipalMapper::parse("RULE:^(?=CN).*$/x/").unwrap_err();
        assert!(e.starts_with("Invalid rule: `RULE:^(?=CN).*$/x/`:"), "{e}");
    }

    #[test]
    fn back_references_past_the_group_count_are_literal() {
        assert_eq!(escape_literal_back_references("$1@$4", 3), "$1@\\$4");
        assert_eq!(escape_literal_back_references("$12", 1), "$12");
        assert_eq!(escape_literal_back_references("$0x", 1), "$0x");
        assert_eq!(escape_literal_back_references("$9", 0), "$9");
        assert_eq!(name("RULE:^CN=(.*)$/$1@$4/", "CN=a").as_deref(), Ok("a@$4"));
        // `$12` with one group is group 1 followed by "2", as Java reads it.
        assert_eq!(name("RULE:^CN=(.*)$/$12/", "CN=a").as_deref(), Ok("a2"));
        // Without groups Kafka escapes nothing and Java's replaceAll fails on `$1`.
        assert!(matches!(
            name("RULE:^CN=a$/$1/", "CN=a"),
            Err(MapError::Replacement { .. })
        ));
    }

    #[test]
    fn replace_all_follows_javas_find_loop() {
        let re = |p: &str| Regex::new(p).unwrap();
        // Java: "abc".replaceAll(".*", "-") is "--" (an empty match at the end too).
        assert_eq!(replace_all(&re(".*"), "abc", "-").as_deref(), Ok("--"));
        assert_eq!(replace_all(&re("x*"), "abc", "-").as_deref(), Ok("-a-b-c-"));
        // A lazy pattern that matches the whole DN may still replace a prefix only.
        assert_eq!(
            name("RULE:CN=(.*?)/[$1]/", "CN=abc").as_deref(),
            Ok("[]abc")
        );
        assert_eq!(
            name("RULE:^CN=(?<user>[a-z]+)$/${user}!/U", "CN=abc").as_deref(),
            Ok("ABC!")
        );
    }
}
