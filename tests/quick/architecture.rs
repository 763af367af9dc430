//! ARCHITECTURE.md names files, modules, types and functions; each name it
//! puts in backticks must still be there, so that a rename or a removal
//! that forgets the page fails here instead of misleading its next reader.
//!
//! What is checked, by the shape of the name:
//!
//! - a path (a name ending in `.rs`, `.md`, `.sql`, `.toml` or `/`, or
//!   holding `/*`: `mcp/sessions.rs`, `tool-runtime/docs/*.md`,
//!   `openai/`): it exists from the repository's root or from a folder of
//!   either crate; a bare file name (`busy.rs`), named in the text of its
//!   folder, is a file of that name somewhere in the two crates;
//! - `Type::item` (`Registry::invoke`, `ResultKind::External`): the file
//!   that defines the type (`struct`, `enum` or `trait`) in `tool-runtime`
//!   or `tool-macros` names the item;
//! - `module::item` (`pipeline::process`, `guard::check_text`): the
//!   module's file (`pipeline.rs`, `pipeline/mod.rs`, or a file of that name
//!   under a folder) names the item.
//!
//! Names of other crates (`serde_json::Value`), code (`#[tool(...)]`) and
//! words are not checked; nor is what the page says of each name, which
//! review reads.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const CRATES: [&str; 2] = ["tool-runtime", "tool-macros"];

/// Every folder and file under `dir`.
fn walk(dir: &Path, folders: &mut Vec<PathBuf>, files: &mut Vec<PathBuf>) {
    folders.push(dir.to_owned());
    for entry in std::fs::read_dir(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, folders, files);
        } else {
            files.push(path);
        }
    }
}

/// Whether `text` holds `word` as a whole identifier.
fn names(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The two crates' folders and files.
struct Tree {
    folders: Vec<PathBuf>,
    files: Vec<PathBuf>,
    /// The Rust sources, with their text.
    sources: Vec<(PathBuf, String)>,
}

impl Tree {
    fn read() -> Tree {
        let (mut folders, mut files) = (Vec::new(), Vec::new());
        for dir in CRATES {
            walk(&Path::new(ROOT).join(dir), &mut folders, &mut files);
        }
        let sources = files
            .iter()
            .filter(|path| path.extension().is_some_and(|extension| extension == "rs"))
            .map(|path| (path.clone(), std::fs::read_to_string(path).unwrap()))
            .collect();
        Tree { folders, files, sources }
    }

    /// Whether a path named on the page exists (see the module docs).
    fn has_path(&self, path: &str) -> bool {
        if !path.contains('/') {
            return self.files.iter().any(|file| file.file_name().is_some_and(|name| name == path));
        }
        if let Some((folder, pattern)) = path.split_once("/*") {
            // `tool-runtime/docs/*.md`: the folder holds such files.
            let ending = pattern.trim_start_matches('*');
            return self.files.iter().any(|file| file.parent() == Some(&Path::new(ROOT).join(folder)) && file.to_string_lossy().ends_with(ending));
        }
        let path = path.trim_end_matches('/');
        Path::new(ROOT).join(path).exists() || self.folders.iter().any(|folder| folder.join(path).exists())
    }
}

/// The files that define `name`: a type, or a module of that name.
fn defining(name: &str, files: &[(PathBuf, String)]) -> Vec<usize> {
    let is_type = name.starts_with(|c: char| c.is_ascii_uppercase());
    files
        .iter()
        .enumerate()
        .filter(|(_, (path, text))| {
            if is_type {
                ["struct", "enum", "trait"].iter().any(|kind| names(text, &format!("{kind} {name}")))
            } else {
                let stem = path.file_stem().unwrap().to_string_lossy();
                let parent = path.parent().and_then(Path::file_name).map(|parent| parent.to_string_lossy());
                stem == name || (stem == "mod" && parent.as_deref() == Some(name))
            }
        })
        .map(|(index, _)| index)
        .collect()
}

/// What is wrong with one name in backticks; `None` when it holds or is not checked.
fn problem(name: &str, tree: &Tree) -> Option<String> {
    let looks_like_path = name.ends_with('/') || name.contains("/*") || [".rs", ".md", ".sql", ".toml"].iter().any(|end| name.ends_with(end));
    if looks_like_path && !name.contains(' ') {
        return (!tree.has_path(name)).then(|| format!("`{name}`: no such file or folder"));
    }
    let files = &tree.sources;
    let (owner, item) = name.rsplit_once("::")?;
    let owner = owner.rsplit("::").next()?;
    let identifier = |word: &str| !word.is_empty() && word.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !identifier(owner) || !identifier(item) {
        return None;
    }
    let defining = defining(owner, files);
    if defining.is_empty() {
        // Another crate's (`serde_json::Value`), or not a name of ours.
        let ours = owner.starts_with(|c: char| c.is_ascii_uppercase()) && files.iter().any(|(_, text)| names(text, owner));
        return ours.then(|| format!("`{name}`: no file defines `{owner}`"));
    }
    let found = defining.iter().any(|&index| names(&files[index].1, item));
    (!found).then(|| format!("`{name}`: `{owner}` has no `{item}` (looked in {})", files[defining[0]].0.display()))
}

#[test]
fn every_name_architecture_md_gives_in_backticks_exists() {
    let page = std::fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md")).unwrap();
    let tree = Tree::read();
    let problems: Vec<String> = page.split('`').skip(1).step_by(2).filter_map(|name| problem(name.trim(), &tree)).collect();
    assert!(problems.is_empty(), "ARCHITECTURE.md names what is not there:\n{}", problems.join("\n"));
}

#[test]
fn the_check_finds_a_method_moved_away_and_a_file_removed() {
    let tree = Tree::read();
    for there in
        ["Registry::invoke", "pipeline::process", "mcp/http/sessions.rs", "durable.rs", "sql/sqlite/", "tool-runtime/docs/*.md", "tools/call"]
    {
        assert_eq!(problem(there, &tree), None, "{there}");
    }
    for gone in ["Registry::read_input", "pipeline::no_such_stage", "mcp/no_such_file.rs", "nowhere.rs", "tool-runtime/docs/*.txt"] {
        assert!(problem(gone, &tree).is_some(), "{gone} is not there");
    }
}
