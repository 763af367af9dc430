//! A doc comment's text as the pages show it: its inline code spans
//! (`` `A-4711` ``) as code, the rest as text. Parameter docs and tool
//! descriptions are written in rustdoc's Markdown, and a page that showed
//! their backticks would show the source, not the docs. The parts are
//! plain text, which the templates escape like any other value (the
//! `doc.html` macro writes a code part inside `<code>`), so a description
//! can no more inject markup than an argument can.

/// Doc text, split at its inline code spans.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Doc {
    pub(crate) parts: Vec<Part>,
}

/// A run of doc text: code, or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) code: bool,
    pub(crate) text: String,
}

impl Doc {
    /// `text` split at its code spans: a run of backticks opens one, the
    /// next run of as many closes it (CommonMark's rule, without its
    /// trimming of one space), and a run that nothing closes is text.
    pub(crate) fn new(text: &str) -> Doc {
        let mut parts = Vec::new();
        let mut plain = String::new();
        let mut rest = text;
        while let Some(open) = rest.find('`') {
            let ticks = rest[open..].bytes().take_while(|&b| b == b'`').count();
            let fence = &rest[open..open + ticks];
            let after = &rest[open + ticks..];
            match closing(after, ticks) {
                Some(close) => {
                    plain.push_str(&rest[..open]);
                    if !plain.is_empty() {
                        parts.push(Part { code: false, text: std::mem::take(&mut plain) });
                    }
                    parts.push(Part { code: true, text: after[..close].to_owned() });
                    rest = &after[close + ticks..];
                }
                None => {
                    plain.push_str(&rest[..open]);
                    plain.push_str(fence);
                    rest = after;
                }
            }
        }
        plain.push_str(rest);
        if !plain.is_empty() {
            parts.push(Part { code: false, text: plain });
        }
        Doc { parts }
    }
}

/// Where the run of exactly `ticks` backticks that closes a code span
/// starts in `text`.
fn closing(text: &str, ticks: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(found) = text[at..].find('`') {
        let start = at + found;
        let run = text[start..].bytes().take_while(|&b| b == b'`').count();
        if run == ticks {
            return Some(start);
        }
        at = start + run;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The doc of these parts.
    fn doc(parts: &[(bool, &str)]) -> Doc {
        Doc { parts: parts.iter().map(|&(code, text)| Part { code, text: text.to_owned() }).collect() }
    }

    #[test]
    fn code_spans_are_code_and_the_rest_text() {
        assert_eq!(
            Doc::new("The order number, for example `A-4711`."),
            doc(&[(false, "The order number, for example "), (true, "A-4711"), (false, ".")])
        );
        assert_eq!(Doc::new("`a` and ``b ` c``"), doc(&[(true, "a"), (false, " and "), (true, "b ` c")]));
        assert_eq!(Doc::new("no code"), doc(&[(false, "no code")]));
    }

    #[test]
    fn a_backtick_nothing_closes_is_text() {
        assert_eq!(Doc::new("it's `open"), doc(&[(false, "it's `open")]));
        assert_eq!(Doc::new("``a` b"), doc(&[(false, "``a` b")]));
        assert_eq!(Doc::new("<b>`<i>`</b>"), doc(&[(false, "<b>"), (true, "<i>"), (false, "</b>")]));
    }
}
