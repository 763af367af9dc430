//! Every field that `tool-runtime/src` writes to `tracing` is escaped, or
//! is of a type that cannot carry text.
//!
//! A field whose text can come from a model, a client or a tool's input (a
//! tool name, a call id, an error that quotes its input, a client's error
//! text) must not forge a log line: it is written through the runtime's
//! `Escaped` wrapper (`tool-runtime/src/error_report.rs`), which escapes
//! control characters. This test reads every `.rs` file under
//! `tool-runtime/src` as tokens, finds each call site (the `tracing` macros,
//! `#[instrument]`, `span.record("field", value)`), and fails for any field,
//! format argument or captured `{name}` that is neither `Escaped(..)`, a
//! literal, `field::Empty`, nor in [`ALLOWED`]: the reviewed list of fields
//! whose value cannot carry text, each with the reason.
//!
//! ```text
//! cargo test --test quick log_fields::
//! ```

use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// A field whose value cannot carry text, and why. `value` is the
/// expression as written, with its `%` or `?`: a changed expression is
/// reviewed again.
struct Allowed {
    field: &'static str,
    value: &'static str,
    why: &'static str,
}

/// The reviewed fields that are written as they are. Add one only for a
/// type that cannot carry text: a number, a duration, an enum, a fixed word.
const ALLOWED: &[Allowed] = &[
    Allowed { field: "max", value: "max", why: "a limit the host configured, a number" },
    Allowed { field: "max", value: "limits.max", why: "the session cap, a number" },
    Allowed { field: "max", value: "max_external", why: "the cap on waiting external calls, a number" },
    Allowed { field: "max_connections", value: "max_connections", why: "the connection cap, a number" },
    Allowed { field: "kind", value: "report.kind.as_str()", why: "ErrorKind's fixed lowercase name" },
    Allowed { field: "block", value: "loss.block", why: "a block's index in its result, a number" },
    Allowed { field: "dialect", value: "?loss.dialect", why: "Dialect, an enum without data" },
    Allowed { field: "verdict", value: "verdict.as_str()", why: "a verdict's fixed name" },
    Allowed { field: "verdict", value: "verdict", why: "approval::ended's `&'static str`, a fixed word of its callers" },
    Allowed { field: "outcome", value: "kind.as_str()", why: "ResultKind's fixed name" },
    Allowed { field: "duration_ms", value: "started.elapsed().as_millis() as u64", why: "milliseconds, a number" },
    Allowed { field: "interim.after", value: "interim.after", why: "the interim text's delay, a Duration" },
];

/// The `tracing` macros that write fields.
const MACROS: &[&str] =
    &["trace", "debug", "info", "warn", "error", "event", "span", "trace_span", "debug_span", "info_span", "warn_span", "error_span"];

/// One field written at a call site.
#[derive(Debug)]
struct Field {
    /// `file:line`.
    at: String,
    /// What writes it: `tracing::warn!`, `#[instrument]`, `span.record`.
    site: String,
    name: String,
    /// The value as written, with its `%` or `?`.
    value: String,
    safe: bool,
}

/// The call sites and fields found in one file's tokens.
#[derive(Default)]
struct Scan {
    sites: usize,
    fields: Vec<Field>,
    /// Call sites that cannot be checked field by field.
    refused: Vec<String>,
}

impl Scan {
    fn file(&mut self, path: &str, text: &str) {
        let tokens: TokenStream = marked(text).parse().unwrap_or_else(|error| panic!("{path} does not tokenize: {error:?}"));
        let (tokens, lines) = unmark(tokens, 1);
        self.walk(path, &tokens, &lines);
    }

    /// Finds the call sites among `tokens` (on `lines`) and in their groups.
    fn walk(&mut self, path: &str, tokens: &[TokenTree], lines: &[usize]) {
        for (i, token) in tokens.iter().enumerate() {
            let line = lines[i];
            match (token, tokens.get(i + 1), tokens.get(i + 2)) {
                (TokenTree::Ident(name), Some(TokenTree::Punct(bang)), Some(TokenTree::Group(args)))
                    if bang.as_char() == '!' && MACROS.contains(&name.to_string().as_str()) =>
                {
                    self.sites += 1;
                    let site = format!("tracing::{name}!");
                    self.macro_args(path, &site, name.to_string().ends_with("span"), args.stream(), line);
                }
                (TokenTree::Punct(hash), Some(TokenTree::Group(attr)), _) if hash.as_char() == '#' && attr.delimiter() == Delimiter::Bracket => {
                    self.attribute(path, attr.stream(), line);
                }
                (TokenTree::Punct(dot), Some(TokenTree::Ident(record)), Some(TokenTree::Group(args)))
                    if dot.as_char() == '.' && record == "record" && args.delimiter() == Delimiter::Parenthesis =>
                {
                    self.record(path, args.stream(), line);
                }
                _ => {}
            }
            if let TokenTree::Group(group) = token {
                let (inner, inner_lines) = unmark(group.stream(), line);
                self.walk(path, &inner, &inner_lines);
            }
        }
    }

    /// The arguments of a `tracing` macro: `parent:`/`target:`/`name:`, a
    /// level, fields, then a message and its format arguments (an event),
    /// or a name then fields (a span).
    fn macro_args(&mut self, path: &str, site: &str, is_span: bool, args: TokenStream, line: usize) {
        let mut named = false;
        let mut in_message = false;
        for (index, (item, line)) in split(args, line).into_iter().enumerate() {
            let at = format!("{path}:{line}");
            if let [TokenTree::Ident(key), TokenTree::Punct(colon), ..] = item.as_slice()
                && colon.as_char() == ':'
                && colon.spacing() == Spacing::Alone
                && ["parent", "target", "name"].contains(&key.to_string().as_str())
            {
                continue;
            }
            if index == 0 && (site == "tracing::event!" || site == "tracing::span!") && text(&item).contains("Level") {
                continue;
            }
            if let [TokenTree::Literal(literal)] = item.as_slice()
                && let quoted = literal.to_string()
                && (quoted.starts_with('"') || quoted.starts_with("r#") || quoted.starts_with("r\""))
            {
                if is_span && !named {
                    named = true;
                } else {
                    in_message = true;
                    for name in captures(&quoted) {
                        self.capture(&at, site, name);
                    }
                }
                continue;
            }
            if in_message {
                self.field(&at, site, text(&item), &item);
            } else {
                self.field_item(&at, site, &item);
            }
        }
    }

    /// `name = value`, `%name`, `?name` or `name`.
    fn field_item(&mut self, at: &str, site: &str, item: &[TokenTree]) {
        let assign = (0..item.len()).find(|&i| is_assign(&item[i]) && !(i > 0 && is_joint(&item[i - 1])));
        match assign {
            Some(eq) => self.field(at, site, text(&item[..eq]).trim_matches('"').to_owned(), &item[eq + 1..]),
            None => self.field(at, site, text(item).trim_start_matches(['%', '?']).to_owned(), item),
        }
    }

    /// `#[instrument(skip_all, fields(..))]`: any other form records the
    /// arguments (or the error, or the return value) as they are.
    fn attribute(&mut self, path: &str, attr: TokenStream, line: usize) {
        let (tokens, lines) = unmark(attr, line);
        let Some(position) = tokens.iter().position(|token| matches!(token, TokenTree::Ident(ident) if ident == "instrument")) else {
            return;
        };
        self.sites += 1;
        let at = format!("{path}:{}", lines[position]);
        let Some(TokenTree::Group(args)) = tokens.get(position + 1) else {
            self.refused.push(format!("{at}: `#[instrument]` records every argument: write `#[instrument(skip_all, fields(..))]`"));
            return;
        };
        let items = split(args.stream(), lines[position]);
        let word = |word: &str| items.iter().any(|(item, _)| matches!(item.as_slice(), [TokenTree::Ident(ident), ..] if ident == word));
        if !word("skip_all") {
            self.refused.push(format!("{at}: `#[instrument]` without `skip_all` records the arguments unescaped"));
        }
        if word("err") || word("ret") {
            self.refused.push(format!("{at}: `#[instrument(err)]`/`(ret)` records the result unescaped: log it with `Escaped`"));
        }
        for (item, line) in &items {
            if let [TokenTree::Ident(fields), TokenTree::Group(group)] = item.as_slice()
                && fields == "fields"
            {
                for (field, line) in split(group.stream(), *line) {
                    self.field_item(&format!("{path}:{line}"), "#[instrument]", &field);
                }
            }
        }
    }

    /// `span.record("field", value)`; other `record` methods take no literal.
    fn record(&mut self, path: &str, args: TokenStream, line: usize) {
        let items = split(args, line);
        if let [(name, line), (value, _)] = items.as_slice()
            && let [TokenTree::Literal(literal)] = name.as_slice()
            && literal.to_string().starts_with('"')
        {
            self.sites += 1;
            self.field(&format!("{path}:{line}"), "span.record", literal.to_string().trim_matches('"').to_owned(), value);
        }
    }

    /// A field written as the tokens `value`.
    fn field(&mut self, at: &str, site: &str, name: String, value: &[TokenTree]) {
        let safe = escaped(value);
        self.fields.push(Field { at: at.to_owned(), site: site.to_owned(), name, value: text(value), safe });
    }

    /// A name a format string captures (`{name}`): written by its `Display`.
    fn capture(&mut self, at: &str, site: &str, name: String) {
        self.fields.push(Field { at: at.to_owned(), site: site.to_owned(), value: name.clone(), name, safe: false });
    }
}

/// Whether `value` cannot forge a line whatever it holds: `Escaped(..)` or
/// `Escaped::..(..)` (under any path), a literal, or `field::Empty`.
fn escaped(value: &[TokenTree]) -> bool {
    let mut value = match value {
        [TokenTree::Punct(sigil), rest @ ..] if matches!(sigil.as_char(), '%' | '?') => rest,
        _ => value,
    };
    let ident = |token: &TokenTree, word: &str| matches!(token, TokenTree::Ident(ident) if ident == word);
    let colon = |token: &TokenTree| matches!(token, TokenTree::Punct(punct) if punct.as_char() == ':');
    let call = |token: &TokenTree| matches!(token, TokenTree::Group(group) if group.delimiter() == Delimiter::Parenthesis);
    if let [TokenTree::Literal(_)] = value {
        return true;
    }
    if value.last().is_some_and(|last| ident(last, "Empty")) && value.iter().all(|token| colon(token) || matches!(token, TokenTree::Ident(_))) {
        return true;
    }
    // A path to the wrapper: `error_report::Escaped`.
    while let [TokenTree::Ident(segment), first, second, rest @ ..] = value
        && segment != "Escaped"
        && colon(first)
        && colon(second)
    {
        value = rest;
    }
    match value {
        [wrapper, args] => ident(wrapper, "Escaped") && call(args),
        [wrapper, first, second, TokenTree::Ident(_), args] => ident(wrapper, "Escaped") && colon(first) && colon(second) && call(args),
        _ => false,
    }
}

/// The names captured by a format string (`{name}`, `{name:?}`).
fn captures(literal: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = literal;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(after) = rest.strip_prefix('{') {
            rest = after;
            continue;
        }
        let end = rest.find(['}', ':']).unwrap_or(rest.len());
        let name = &rest[..end];
        if name.starts_with(|c: char| c.is_alphabetic() || c == '_') {
            names.push(name.to_owned());
        }
    }
    names
}

/// A `=` that may assign: not the first of `==` or `=>` (which are joint);
/// the second of `<=`, `>=`, `!=` or `==` follows a joint one ([`is_joint`]).
fn is_assign(token: &TokenTree) -> bool {
    matches!(token, TokenTree::Punct(punct) if punct.as_char() == '=' && punct.spacing() == Spacing::Alone)
}

fn is_joint(token: &TokenTree) -> bool {
    matches!(token, TokenTree::Punct(punct) if punct.spacing() == Spacing::Joint)
}

/// The items between the top-level commas of `tokens` (which start on
/// `line`), each with the line it starts on.
fn split(tokens: TokenStream, line: usize) -> Vec<(Vec<TokenTree>, usize)> {
    let (tokens, lines) = unmark(tokens, line);
    let mut items = vec![(Vec::new(), line)];
    for (token, line) in tokens.into_iter().zip(lines) {
        match &token {
            TokenTree::Punct(comma) if comma.as_char() == ',' => items.push((Vec::new(), line)),
            _ => {
                let item = items.last_mut().unwrap();
                if item.0.is_empty() {
                    item.1 = line;
                }
                item.0.push(token);
            }
        }
    }
    items.retain(|(item, _)| !item.is_empty());
    items
}

/// What starts each line of the text the scan tokenizes: `__line_12`. The
/// tokenizer keeps no positions unless its `span-locations` feature is on,
/// and that feature reaches the proc-macro2 build every proc-macro of the
/// workspace shares; these marks give the lines without it.
const MARK: &str = "__line_";

/// `text` with each line's number written before it, as a token.
fn marked(text: &str) -> String {
    text.lines().enumerate().map(|(index, line)| format!("{MARK}{} {line}\n", index + 1)).collect()
}

fn is_mark(token: &TokenTree) -> bool {
    matches!(token, TokenTree::Ident(ident) if ident.to_string().starts_with(MARK))
}

/// `tokens` without their line marks, and the line of each; `line` is where
/// they start.
fn unmark(tokens: TokenStream, mut line: usize) -> (Vec<TokenTree>, Vec<usize>) {
    let (mut kept, mut lines) = (Vec::new(), Vec::new());
    for token in tokens {
        if is_mark(&token) {
            line = token.to_string()[MARK.len()..].parse().unwrap();
        } else {
            kept.push(token);
            lines.push(line);
        }
    }
    (kept, lines)
}

/// Tokens as written, spaced only where Rust needs it (`a.b()`, `x as u64`).
fn text(tokens: &[TokenTree]) -> String {
    let mut out = String::new();
    for token in tokens.iter().filter(|token| !is_mark(token)) {
        let piece = match token {
            TokenTree::Group(group) => {
                let inner = text(&group.stream().into_iter().collect::<Vec<_>>());
                match group.delimiter() {
                    Delimiter::Parenthesis => format!("({inner})"),
                    Delimiter::Bracket => format!("[{inner}]"),
                    Delimiter::Brace => format!("{{{inner}}}"),
                    Delimiter::None => inner,
                }
            }
            other => other.to_string(),
        };
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '"');
        if word(out.chars().last()) && word(piece.chars().next()) {
            out.push(' ');
        }
        out.push_str(&piece);
    }
    out
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

fn scan_runtime() -> Scan {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("tool-runtime/src"), &mut files);
    files.sort();
    let mut scan = Scan::default();
    for file in files {
        let shown = file.strip_prefix(root).unwrap().display().to_string();
        scan.file(&shown, &std::fs::read_to_string(&file).unwrap());
    }
    scan
}

#[test]
fn every_field_the_runtime_logs_is_escaped_or_cannot_carry_text() {
    let scan = scan_runtime();
    assert!(scan.sites >= 30, "the scan found only {} call sites in tool-runtime/src: is it reading the files?", scan.sites);
    let same = |a: &str, b: &str| a.replace(' ', "") == b.replace(' ', "");
    let allowed = |field: &Field| ALLOWED.iter().any(|a| a.field == field.name && same(a.value, &field.value));
    let mut problems = scan.refused.clone();
    for field in scan.fields.iter().filter(|field| !field.safe && !allowed(field)) {
        let (sigil, expr) = match field.value.strip_prefix(['%', '?']) {
            Some(expr) => (&field.value[..1], expr),
            None => ("%", field.value.as_str()),
        };
        let borrow = if expr.starts_with('&') { "" } else { "&" };
        problems.push(format!(
            "{}: `{}` writes field `{}` as `{}`, unescaped: write `{} = {sigil}Escaped({borrow}{expr})`",
            field.at, field.site, field.name, field.value, field.name
        ));
    }
    for entry in ALLOWED {
        if !scan.fields.iter().any(|field| field.name == entry.field && same(entry.value, &field.value)) {
            problems.push(format!(
                "ALLOWED in tests/quick/log_fields.rs lists `{}` written as `{}` ({}), which no call site writes any more: remove it",
                entry.field, entry.value, entry.why
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} log fields can forge a log line:\n{}\n\nText from a model, a client or a tool's input must be written \
         through `Escaped` (tool-runtime/src/error_report.rs), which escapes control characters. Only a value whose \
         type cannot carry text (a number, a duration, an enum, a fixed word) may be written as it is: add it, with \
         the reason, to ALLOWED in tests/quick/log_fields.rs.",
        problems.len(),
        problems.join("\n")
    );
}

/// The scanner itself, on every form a field can take.
#[test]
fn the_scan_finds_every_form_of_field_and_accepts_only_escaped_ones() {
    let code = r##"
        fn f() {
            tracing::warn!(tool = %tool, ?origin, %why, call_id, "{} and {name:?} of {{not_a_capture}}", id, parent: span);
            tracing::info!(parent: span, tool = %Escaped(&tool), why = ?Escaped(&why), n = 3, e = field::Empty, "done");
            tracing::info_span!("tool_call", verdict = tracing::field::Empty, code = Escaped::optional(code));
            tracing::event!(tracing::Level::WARN, "text" = report.text, r#"raw {raw}"#);
            span.record("outcome", kind.as_str());
            self.steps.record(&result, ends);
            if a == b { debug!(x = if y >= z { 1 } else { 2 }); }
        }
        #[tracing::instrument(err, fields(call_id = %id))]
        fn g() {}
        #[instrument]
        fn h() {}
    "##;
    let mut scan = Scan::default();
    scan.file("snippet.rs", code);
    let unsafe_fields: Vec<(&str, &str)> = scan.fields.iter().filter(|f| !f.safe).map(|f| (f.name.as_str(), f.value.as_str())).collect();
    assert_eq!(
        unsafe_fields,
        [
            ("tool", "%tool"),
            ("origin", "?origin"),
            ("why", "%why"),
            ("call_id", "call_id"),
            ("name", "name"),
            ("id", "id"),
            ("text", "report.text"),
            ("raw", "raw"),
            ("outcome", "kind.as_str()"),
            ("x", "if y>=z{1}else{2}"),
            ("call_id", "%id"),
        ]
    );
    let safe: Vec<&str> = scan.fields.iter().filter(|f| f.safe).map(|f| f.name.as_str()).collect();
    assert_eq!(safe, ["tool", "why", "n", "e", "verdict", "code"]);
    assert_eq!(scan.sites, 8, "five macros, one record and two attributes, one of them without arguments");
    assert_eq!(scan.refused.len(), 3, "{:?}", scan.refused);
    assert!(scan.refused[0].starts_with("snippet.rs:11: `#[instrument]` without `skip_all`"), "{:?}", scan.refused);
    assert!(scan.refused[1].starts_with("snippet.rs:11: `#[instrument(err)]`"), "{:?}", scan.refused);
    assert!(scan.refused[2].starts_with("snippet.rs:13: `#[instrument]` records every argument"), "{:?}", scan.refused);
    assert!(scan.fields[0].at == "snippet.rs:3", "{:?}", scan.fields[0]);
}
