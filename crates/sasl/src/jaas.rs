//! Kafka's `sasl.jaas.config` values: `<LoginModule> <flag> (<key>=<value>)* ;`, read as
//! Kafka's `JaasConfig` reads them, through a `java.io.StreamTokenizer` with `//` and `/* */`
//! comments and `-`, `_` and `$` as word characters.
//!
//! What that means for a value: a double- or single-quoted string is taken as written, with
//! Java escapes (`\"`, `\\`, `\n`, `\t`, octal `\101`…), up to the closing quote (or, unclosed,
//! the end of the line); unquoted, only a *word* is a value: letters, digits, `.`, `-`, `_`, `$`
//! and non-ASCII letters, not starting with a digit, `.` or `-`. So `password=admin-secret`
//! works, while `password=123` or `password=p@ss` is "Value not specified" and must be quoted,
//! as in Kafka. Keys follow the same rules (a key with `@` must be quoted).

use std::collections::BTreeMap;
use std::fmt;

/// Kafka's PLAIN login module: its `user_<name>` options are the broker's PLAIN users.
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
/// Kafka's SCRAM login module: `username` and `password` for a client.
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// Why a JAAS config value was refused; the texts are Kafka's where Kafka has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JaasConfigError {
    #[error("Login module not specified in JAAS config")]
    LoginModuleNotSpecified,
    /// The first token of an entry was not a word or a quoted string (Kafka's JDK refuses the
    /// entry with an exception that has no message).
    #[error("Login module name not valid in JAAS config")]
    LoginModuleNameNotValid,
    #[error("Login module control flag not specified in JAAS config")]
    ControlFlagNotSpecified,
    #[error("Login module control flag is not available in the JAAS config")]
    ControlFlagNotAvailable,
    #[error("Invalid login module control flag '{0}' in JAAS config")]
    InvalidControlFlag(String),
    /// Holds the key, or `null` where the key was not a word or a string, as Kafka prints it.
    #[error("Value not specified for key '{0}' in JAAS config")]
    ValueNotSpecified(String),
    /// A key that is a number (`5="x"`): Kafka keeps it as a null key, kcoord refuses it.
    #[error("Option name not specified in JAAS config")]
    OptionNameNotSpecified,
    #[error("JAAS config entry not terminated by semi-colon")]
    NotTerminatedBySemicolon,
    /// A property that must hold one login module holds several (`JaasContext.load`).
    #[error("JAAS config property contains {0} login modules, should be 1 module")]
    NotOneLoginModule(usize),
}

/// A login module's control flag (ignored by Kafka's SASL code, checked for spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlFlag {
    Required,
    Requisite,
    Sufficient,
    Optional,
}

impl ControlFlag {
    /// The flag of a word, in any case (Kafka upper-cases it with `Locale.ROOT`).
    fn parse(word: &str) -> Option<ControlFlag> {
        match word.to_ascii_uppercase().as_str() {
            "REQUIRED" => Some(ControlFlag::Required),
            "REQUISITE" => Some(ControlFlag::Requisite),
            "SUFFICIENT" => Some(ControlFlag::Sufficient),
            "OPTIONAL" => Some(ControlFlag::Optional),
            _ => None,
        }
    }
}

/// One `<LoginModule> <flag> options… ;` entry.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginModuleEntry {
    pub login_module: String,
    pub control_flag: ControlFlag,
    /// A repeated key keeps its last value, as in Kafka's map.
    pub options: BTreeMap<String, String>,
}

impl LoginModuleEntry {
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }
}

/// Option values are passwords more often than not: only the keys are shown.
impl fmt::Debug for LoginModuleEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoginModuleEntry")
            .field("login_module", &self.login_module)
            .field("control_flag", &self.control_flag)
            .field("option_keys", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A parsed JAAS config value: one or more login module entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JaasConfig {
    entries: Vec<LoginModuleEntry>,
}

impl JaasConfig {
    /// Every entry of `text`; at least one is required.
    pub fn parse(text: &str) -> Result<JaasConfig, JaasConfigError> {
        let mut tokenizer = Tokenizer::new(text);
        let mut entries = Vec::new();
        loop {
            let first = tokenizer.next_token();
            if first == Token::Eof {
                break;
            }
            entries.push(parse_entry(first, &mut tokenizer)?);
        }
        if entries.is_empty() {
            return Err(JaasConfigError::LoginModuleNotSpecified);
        }
        Ok(JaasConfig { entries })
    }

    /// The single entry of a `sasl.jaas.config` property: Kafka requires exactly one.
    pub fn parse_single(text: &str) -> Result<LoginModuleEntry, JaasConfigError> {
        let mut config = JaasConfig::parse(text)?;
        match config.entries.len() {
            1 => Ok(config.entries.remove(0)),
            n => Err(JaasConfigError::NotOneLoginModule(n)),
        }
    }

    pub fn entries(&self) -> &[LoginModuleEntry] {
        &self.entries
    }
}

fn parse_entry(
    first: Token,
    tokenizer: &mut Tokenizer,
) -> Result<LoginModuleEntry, JaasConfigError> {
    let login_module = first.text().map(str::to_string);
    let flag_token = tokenizer.next_token();
    if flag_token == Token::Eof {
        return Err(JaasConfigError::ControlFlagNotSpecified);
    }
    let flag = flag_token
        .text()
        .ok_or(JaasConfigError::ControlFlagNotAvailable)?;
    let control_flag = ControlFlag::parse(flag)
        .ok_or_else(|| JaasConfigError::InvalidControlFlag(flag.to_string()))?;
    let mut options = BTreeMap::new();
    let terminated = loop {
        let key_token = tokenizer.next_token();
        match key_token {
            Token::Eof => break false,
            Token::Ordinary(';') => break true,
            _ => {}
        }
        let (key, value) = parse_option(key_token, tokenizer)?;
        options.insert(key, value);
    };
    if !terminated {
        return Err(JaasConfigError::NotTerminatedBySemicolon);
    }
    match login_module {
        Some(login_module) if !login_module.is_empty() => Ok(LoginModuleEntry {
            login_module,
            control_flag,
            options,
        }),
        _ => Err(JaasConfigError::LoginModuleNameNotValid),
    }
}

fn parse_option(
    key_token: Token,
    tokenizer: &mut Tokenizer,
) -> Result<(String, String), JaasConfigError> {
    let key = key_token.text().map(str::to_string);
    let not_specified =
        || JaasConfigError::ValueNotSpecified(key.clone().unwrap_or_else(|| "null".into()));
    if tokenizer.next_token() != Token::Ordinary('=') {
        return Err(not_specified());
    }
    let value = tokenizer
        .next_token()
        .text()
        .map(str::to_string)
        .ok_or_else(not_specified)?;
    let key = key.ok_or(JaasConfigError::OptionNameNotSpecified)?;
    Ok((key, value))
}

/// A `StreamTokenizer` token, as far as the parser cares.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Eof,
    Word(String),
    Quoted(String),
    /// A number: it has no text (`sval` is null), so it is never a name or a value.
    Number,
    Ordinary(char),
}

impl Token {
    fn text(&self) -> Option<&str> {
        match self {
            Token::Word(text) | Token::Quoted(text) => Some(text),
            _ => None,
        }
    }
}

/// `java.io.StreamTokenizer` as `JaasConfig` configures it.
struct Tokenizer {
    chars: Vec<char>,
    pos: usize,
}

impl Tokenizer {
    fn new(text: &str) -> Tokenizer {
        Tokenizer {
            chars: text.chars().collect(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn read(&mut self) -> Option<char> {
        let c = self.peek();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn next_token(&mut self) -> Token {
        if !self.skip_blanks_and_comments() {
            return Token::Eof;
        }
        let Some(c) = self.read() else {
            return Token::Eof;
        };
        if is_number_char(c) {
            return self.number(c);
        }
        if is_word_char(c) {
            return self.word(c);
        }
        if c == '"' || c == '\'' {
            return self.quoted(c);
        }
        Token::Ordinary(c)
    }

    /// Skips whitespace (every character up to the space) and comments; false when a block
    /// comment runs to the end, which ends the input.
    fn skip_blanks_and_comments(&mut self) -> bool {
        loop {
            match self.peek() {
                Some(c) if c <= ' ' => self.pos += 1,
                Some('/') => {
                    self.pos += 1;
                    match self.read() {
                        Some('*') => {
                            if !self.skip_block_comment() {
                                return false;
                            }
                        }
                        // `//`, and (as `/` is also the tokenizer's comment character) `/`
                        // followed by anything: the rest of the line goes, the character after
                        // the slash included even when it is a line break.
                        _ => self.skip_line(),
                    }
                }
                _ => return true,
            }
        }
    }

    fn skip_line(&mut self) {
        while !matches!(self.peek(), None | Some('\n') | Some('\r')) {
            self.pos += 1;
        }
    }

    /// After `/*`, up to `*/`, with StreamTokenizer's habit of taking the character after a
    /// line break without looking at it as a possible end. False at the end of the input.
    fn skip_block_comment(&mut self) -> bool {
        let mut previous = None;
        loop {
            let mut c = self.read();
            if c == Some('/') && previous == Some('*') {
                return true;
            }
            if c == Some('\r') {
                c = self.read();
                if c == Some('\n') {
                    c = self.read();
                }
            } else if c == Some('\n') {
                c = self.read();
            }
            match c {
                None => return false,
                Some(c) => previous = Some(c),
            }
        }
    }

    /// A number (its value is of no use here); a `-` not followed by a digit or `.` is an
    /// ordinary character.
    fn number(&mut self, first: char) -> Token {
        if first == '-' && !matches!(self.peek(), Some('.' | '0'..='9')) {
            return Token::Ordinary('-');
        }
        let mut seen_dot = first == '.';
        while let Some(c) = self.peek() {
            match c {
                '0'..='9' => {}
                '.' if !seen_dot => seen_dot = true,
                _ => break,
            }
            self.pos += 1;
        }
        Token::Number
    }

    fn word(&mut self, first: char) -> Token {
        let mut word = String::from(first);
        while let Some(c) = self
            .peek()
            .filter(|&c| is_word_char(c) || is_number_char(c))
        {
            word.push(c);
            self.pos += 1;
        }
        Token::Word(word)
    }

    /// Up to the closing quote, a line break (left for the next token) or the end.
    fn quoted(&mut self, quote: char) -> Token {
        let mut text = String::new();
        let mut next = self.read();
        while let Some(d) = next.filter(|&d| d != quote && d != '\n' && d != '\r') {
            if d == '\\' {
                let (c, after) = self.escape();
                text.push(c);
                next = after;
            } else {
                text.push(d);
                next = self.read();
            }
        }
        if matches!(next, Some('\n' | '\r')) {
            self.pos -= 1;
        }
        Token::Quoted(text)
    }

    /// After a backslash: the character it stands for and the character read after it.
    fn escape(&mut self) -> (char, Option<char>) {
        let Some(first) = self.read() else {
            // Java appends (char) -1 for a backslash at the very end.
            return ('\u{ffff}', None);
        };
        let Some(mut value) = first.to_digit(8) else {
            let c = match first {
                'a' => '\x07',
                'b' => '\x08',
                'f' => '\x0c',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'v' => '\x0b',
                other => other,
            };
            return (c, self.read());
        };
        let mut after = self.read();
        if let Some(second) = after.and_then(|c| c.to_digit(8)) {
            value = value * 8 + second;
            after = self.read();
            if let Some(third) = after.and_then(|c| c.to_digit(8)).filter(|_| first <= '3') {
                value = value * 8 + third;
                after = self.read();
            }
        }
        (char::from_u32(value).unwrap_or('\u{fffd}'), after)
    }
}

/// StreamTokenizer's numeric characters (`parseNumbers`).
fn is_number_char(c: char) -> bool {
    c.is_ascii_digit() || c == '.' || c == '-'
}

/// StreamTokenizer's word characters: ASCII letters, `\u00a0`-`\u00ff`, everything beyond, and
/// the `-`, `_` and `$` JaasConfig adds (`-` only inside a word: it starts a number).
fn is_word_char(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '-' || c == '_' || c == '$' || c >= '\u{a0}'
}

#[cfg(test)]
mod tests {
    //! Every input below was also given to Kafka 4.4's own `JaasConfig`, which read it the
    //! same way (same options, same error text), except the numeric key, which Kafka keeps as
    //! a null key.

    use super::*;

    fn single(text: &str) -> LoginModuleEntry {
        JaasConfig::parse_single(text).unwrap()
    }

    fn error(text: &str) -> JaasConfigError {
        JaasConfig::parse(text).unwrap_err()
    }

    #[test]
    fn the_brokers_plain_config_from_kafkas_documentation_parses() {
        let entry = single(
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" \
             password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";",
        );
        assert_eq!(entry.login_module, PLAIN_LOGIN_MODULE);
        assert_eq!(entry.control_flag, ControlFlag::Required);
        assert_eq!(entry.options.len(), 4);
        assert_eq!(entry.option("username"), Some("admin"));
        assert_eq!(entry.option("password"), Some("admin-secret"));
        assert_eq!(entry.option("user_admin"), Some("admin-secret"));
        assert_eq!(entry.option("user_alice"), Some("alice-secret"));
    }

    #[test]
    fn a_clients_scram_config_parses_with_unquoted_words() {
        let entry = single(
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=alice password=alice-secret;",
        );
        assert_eq!(entry.login_module, SCRAM_LOGIN_MODULE);
        assert_eq!(entry.option("username"), Some("alice"));
        assert_eq!(entry.option("password"), Some("alice-secret"));
    }

    #[test]
    fn a_module_with_no_options_parses() {
        let entry = single("org.apache.kafka.common.security.scram.ScramLoginModule required;");
        assert!(entry.options.is_empty());
    }

    #[test]
    fn control_flags_are_read_in_any_case() {
        for (flag, expected) in [
            ("required", ControlFlag::Required),
            ("REQUISITE", ControlFlag::Requisite),
            ("Sufficient", ControlFlag::Sufficient),
            ("optional", ControlFlag::Optional),
        ] {
            assert_eq!(single(&format!("M {flag};")).control_flag, expected);
        }
        assert_eq!(
            error("M mandatory;"),
            JaasConfigError::InvalidControlFlag("mandatory".into())
        );
        // A quoted flag is a string token, which StreamTokenizer gives a text as it does a word.
        assert_eq!(
            single("M \"required\";").control_flag,
            ControlFlag::Required
        );
    }

    #[test]
    fn quoted_values_keep_spaces_separators_and_java_escapes() {
        let entry = single(
            r#"M required a="p@ss w;rd=" b='single "quoted"' c="q\"uote\\back" d="\t\n\101\7\0" e="x\zy";"#,
        );
        assert_eq!(entry.option("a"), Some("p@ss w;rd="));
        assert_eq!(entry.option("b"), Some("single \"quoted\""));
        assert_eq!(entry.option("c"), Some("q\"uote\\back"));
        assert_eq!(entry.option("d"), Some("\t\nA\x07\0"));
        assert_eq!(entry.option("e"), Some("xzy"));
    }

    #[test]
    fn octal_escapes_take_three_digits_only_up_to_0377() {
        let entry = single(r#"M required a="\377" b="\477" c="\1234";"#);
        assert_eq!(entry.option("a"), Some("\u{ff}"));
        assert_eq!(entry.option("b"), Some("\u{27}7"));
        assert_eq!(entry.option("c"), Some("S4"));
    }

    #[test]
    fn comments_are_skipped() {
        let entry = single(
            "// the broker\nM /* flag: */ required a=\"x\" // a comment\n b=\"y\" /* multi\nline */ ;",
        );
        assert_eq!(entry.option("a"), Some("x"));
        assert_eq!(entry.option("b"), Some("y"));
        assert_eq!(entry.options.len(), 2);
    }

    #[test]
    fn a_lone_slash_comments_out_the_rest_of_the_line() {
        assert_eq!(single("M required a=b /c=d\n;").options.len(), 1);
    }

    #[test]
    fn unquoted_values_must_be_words() {
        for (text, key) in [
            ("M required password=123;", "password"),
            ("M required password=@ss;", "password"),
            // `p` is the value; then `@` is a key with no text, not followed by `=`.
            ("M required password=p@ss;", "null"),
            ("M required password=.x;", "password"),
            ("M required password=-x;", "password"),
            ("M required password=;", "password"),
            ("M required user_bob@corp=\"x\";", "user_bob"),
            ("M required , a=\"x\";", "null"),
        ] {
            assert_eq!(
                error(text),
                JaasConfigError::ValueNotSpecified(key.into()),
                "{text}"
            );
        }
        assert_eq!(
            error("M required password;").to_string(),
            "Value not specified for key 'password' in JAAS config"
        );
    }

    #[test]
    fn words_may_hold_digits_dots_dashes_underscores_and_dollars() {
        let entry =
            single("M required user_bob.smith-2=pa$$_w.rd-9 $x=_y \u{e9}t\u{e9}=\u{4e2d}\u{6587};");
        assert_eq!(entry.option("user_bob.smith-2"), Some("pa$$_w.rd-9"));
        assert_eq!(entry.option("$x"), Some("_y"));
        assert_eq!(entry.option("\u{e9}t\u{e9}"), Some("\u{4e2d}\u{6587}"));
    }

    #[test]
    fn a_quoted_key_may_hold_any_character() {
        assert_eq!(
            single("M required \"user_bob@corp\"=\"x\";").option("user_bob@corp"),
            Some("x")
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        assert_eq!(single("M required a=\"1\" a=\"2\";").option("a"), Some("2"));
    }

    #[test]
    fn a_missing_semicolon_is_refused() {
        assert_eq!(
            error("M required a=\"b\""),
            JaasConfigError::NotTerminatedBySemicolon
        );
        assert_eq!(
            error("M required"),
            JaasConfigError::NotTerminatedBySemicolon
        );
        // A backslash at the very end leaves the string, and the entry, unfinished.
        assert_eq!(
            error("M required a=\"x\\"),
            JaasConfigError::NotTerminatedBySemicolon
        );
    }

    #[test]
    fn an_empty_config_has_no_login_module() {
        for text in ["", "   ", "// nothing\n", "/* nothing */"] {
            assert_eq!(
                error(text),
                JaasConfigError::LoginModuleNotSpecified,
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_missing_or_wordless_flag_is_refused() {
        assert_eq!(error("M"), JaasConfigError::ControlFlagNotSpecified);
        assert_eq!(error("M ;"), JaasConfigError::ControlFlagNotAvailable);
        assert_eq!(error("M 1;"), JaasConfigError::ControlFlagNotAvailable);
    }

    #[test]
    fn a_module_name_that_is_not_a_word_is_refused() {
        assert_eq!(
            error("1 required;"),
            JaasConfigError::LoginModuleNameNotValid
        );
        assert_eq!(
            error("\"\" required;"),
            JaasConfigError::LoginModuleNameNotValid
        );
        // The flag is checked first, as Kafka builds the entry only once it is read: here
        // the "flag" is the `=`.
        assert_eq!(error("5=\"x\";"), JaasConfigError::ControlFlagNotAvailable);
    }

    #[test]
    fn a_numeric_key_is_refused() {
        assert_eq!(
            error("M required 5=\"x\";"),
            JaasConfigError::OptionNameNotSpecified
        );
    }

    #[test]
    fn an_unclosed_quote_ends_at_the_line_break() {
        let entry = single("M required a=\"open\n b=\"c\";");
        assert_eq!(entry.option("a"), Some("open"));
        assert_eq!(entry.option("b"), Some("c"));
    }

    #[test]
    fn a_property_must_hold_exactly_one_login_module() {
        let two = "A required; B optional a=\"b\";";
        assert_eq!(JaasConfig::parse(two).unwrap().entries().len(), 2);
        assert_eq!(
            JaasConfig::parse_single(two),
            Err(JaasConfigError::NotOneLoginModule(2))
        );
        assert_eq!(
            JaasConfigError::NotOneLoginModule(2).to_string(),
            "JAAS config property contains 2 login modules, should be 1 module"
        );
    }

    #[test]
    fn debug_output_shows_keys_but_not_values() {
        let shown = format!("{:?}", single("M required password=\"hunter2\";"));
        assert!(
            shown.contains("password") && !shown.contains("hunter2"),
            "{shown}"
        );
    }
}
