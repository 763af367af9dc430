//! Doc comments into the descriptions the model reads.
//!
//! The macro passes the doc comment through untouched (every `#[doc]` value
//! joined with `\n`); all text processing happens here, once, with tests.

/// The description of a tool or parameter from its raw doc comment: the text
/// up to the first rustdoc heading (`# Errors`, `# Arguments`, ...), the lines
/// of one paragraph joined with a space, paragraphs separated by a blank line,
/// code blocks kept line by line.
pub(crate) fn description(raw: &str) -> String {
    let lines = unindent(raw);
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut in_code = false;
    for line in &lines {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            if in_code {
                current.push_str(trimmed);
                paragraphs.push(std::mem::take(&mut current));
            } else {
                if !current.is_empty() {
                    paragraphs.push(std::mem::take(&mut current));
                }
                current.push_str(trimmed);
                current.push('\n');
            }
            in_code = !in_code;
            continue;
        }
        if in_code {
            current.push_str(line);
            current.push('\n');
            continue;
        }
        if is_heading(trimmed) {
            break;
        }
        if trimmed.is_empty() {
            if !current.is_empty() {
                paragraphs.push(std::mem::take(&mut current));
            }
            continue;
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(trimmed);
    }
    if !current.is_empty() {
        paragraphs.push(current.trim_end().to_owned());
    }
    paragraphs.join("\n\n")
}

/// The text for parameter `name` in the doc comment's `# Arguments` section
/// (rustdoc's convention: ``* `name` - text``, continuation lines indented).
pub(crate) fn argument(raw: &str, name: &str) -> Option<String> {
    let lines = unindent(raw);
    let mut in_section = false;
    let mut found: Option<String> = None;
    for line in &lines {
        let trimmed = line.trim();
        if is_heading(trimmed) {
            if found.is_some() {
                break;
            }
            in_section = trimmed.trim_start_matches('#').trim().eq_ignore_ascii_case("arguments");
            continue;
        }
        if !in_section {
            continue;
        }
        if let Some((item, text)) = bullet(trimmed) {
            if found.is_some() {
                break;
            }
            if item == name {
                found = Some(text.to_owned());
            }
        } else if let Some(text) = found.as_mut() {
            if trimmed.is_empty() {
                break;
            }
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(trimmed);
        }
    }
    found.filter(|text| !text.is_empty())
}

/// ``* `name` - text`` (also `-` bullets and `:` or `–` separators).
fn bullet(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("* ").or_else(|| line.strip_prefix("- "))?.trim_start();
    let rest = rest.strip_prefix('`')?;
    let (name, rest) = rest.split_once('`')?;
    let rest = rest.trim_start();
    let text = ["-", ":", "–", "—"].iter().find_map(|sep| rest.strip_prefix(sep)).unwrap_or(rest);
    Some((name, text.trim()))
}

fn is_heading(trimmed: &str) -> bool {
    let hashes = trimmed.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ')
}

/// Removes the indentation the lines share, as rustdoc does, so that `///`
/// comments (one leading space) and `/** */` blocks read the same.
fn unindent(raw: &str) -> Vec<&str> {
    let lines: Vec<&str> = raw.lines().collect();
    let indent = lines.iter().filter(|line| !line.trim().is_empty()).map(|line| line.len() - line.trim_start().len()).min().unwrap_or(0);
    lines.into_iter().map(|line| if line.len() >= indent { &line[indent..] } else { line.trim_start() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_the_lines_of_a_paragraph_and_keeps_paragraphs() {
        let raw = " Look up one order\n by its number.\n\n Returns its status.";
        assert_eq!(description(raw), "Look up one order by its number.\n\nReturns its status.");
    }

    #[test]
    fn stops_at_the_first_heading() {
        let raw = " Refund an order.\n\n # Errors\n\n Fails when the order shipped.";
        assert_eq!(description(raw), "Refund an order.");
    }

    #[test]
    fn a_hash_without_a_space_is_not_a_heading() {
        assert_eq!(description(" Tag #1 wins.\n #hashtag"), "Tag #1 wins. #hashtag");
    }

    #[test]
    fn block_comments_are_unindented() {
        let raw = "\n    First line\n    second line.\n";
        assert_eq!(description(raw), "First line second line.");
    }

    #[test]
    fn code_blocks_keep_their_lines() {
        let raw = " Call it like this:\n\n ```\n lookup(1)\n lookup(2)\n ```\n After.";
        assert_eq!(description(raw), "Call it like this:\n\n```\nlookup(1)\nlookup(2)\n```\n\nAfter.");
    }

    #[test]
    fn empty_docs_give_an_empty_description() {
        assert_eq!(description(""), "");
        assert_eq!(description("   \n  "), "");
    }

    #[test]
    fn reads_the_arguments_section() {
        let raw = " Refund.\n\n # Arguments\n\n * `order_id` - The order\n   to refund.\n * `amount` - In cents.\n\n # Errors\n * `x` - no";
        assert_eq!(argument(raw, "order_id").as_deref(), Some("The order to refund."));
        assert_eq!(argument(raw, "amount").as_deref(), Some("In cents."));
        assert_eq!(argument(raw, "x"), None);
        assert_eq!(argument(raw, "missing"), None);
    }

    #[test]
    fn arguments_section_accepts_dash_bullets_and_colons() {
        let raw = " # Arguments\n - `q`: The query.";
        assert_eq!(argument(raw, "q").as_deref(), Some("The query."));
    }

    #[test]
    fn the_arguments_section_is_not_part_of_the_description() {
        let raw = " Search.\n # Arguments\n * `q` - The query.";
        assert_eq!(description(raw), "Search.");
    }
}
