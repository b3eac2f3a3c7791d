//! Every reference the sources make to the spec digest resolves in `docs/spec-digest/`: a
//! section (`spec digest §6.2`, `spec §21.5`), a validation ladder step (`ladder steps
//! 10–12`) or a rule tag (`LSTN-4`, `CACHE-6`). The comments lean on the digest for the
//! rules the code implements; a reference to a section or tag it lacks points nowhere.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's root, two levels above this crate.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The text of the server requirements digest.
fn digest() -> String {
    std::fs::read_to_string(root().join("docs/spec-digest/mcp-2026-07-28-server.md")).expect("the digest is in docs/")
}

/// Every `.rs` and `.md` file under `dir`, leaving out build output, git data and the digest.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable directory").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && !["target", "node_modules", "spec-digest"].contains(&name.as_str()) {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The tags the digest defines: the first word of a table row (`| HTTP-6 |`) or a bullet
/// (`- CACHE-6 …`) shaped `AREA-N`.
fn defined_tags(digest: &str) -> BTreeSet<String> {
    let first_word = |line: &str| {
        let rest = line.strip_prefix("| ").or_else(|| line.strip_prefix("- "))?;
        rest.split([' ', '|']).next().map(str::to_owned)
    };
    digest.lines().filter_map(first_word).filter(|word| tag_at(word, 0).is_some()).collect()
}

/// The tag `AREA-N` (2–6 capitals, a dash, 1–2 digits) starting at byte `at` of `text`, if
/// one does, standing alone (no letter or digit on either side).
fn tag_at(text: &str, at: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    let area = bytes[at..].iter().take_while(|b| b.is_ascii_uppercase()).count();
    let digits = bytes.get(at + area + 1..)?.iter().take_while(|b| b.is_ascii_digit()).count();
    let end = at + area + 1 + digits;
    let alone = |b: Option<&u8>| !b.is_some_and(|b| b.is_ascii_alphanumeric());
    let fits = (2..=6).contains(&area) && bytes.get(at + area) == Some(&b'-') && (1..=2).contains(&digits);
    (fits && alone(at.checked_sub(1).and_then(|i| bytes.get(i))) && alone(bytes.get(end))).then(|| &text[at..end])
}

/// Whether the digest has section `reference` (`6`, `6.2`, or `21.5`: item 5 of §21).
fn has_section(digest: &str, reference: &str) -> bool {
    let (major, minor) = reference.split_once('.').unwrap_or((reference, ""));
    let Some(start) = digest.find(&format!("\n## {major}. ")) else { return false };
    if minor.is_empty() {
        return true;
    }
    let section = &digest[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)];
    section.contains(&format!("\n### {major}.{minor} ")) || section.contains(&format!("\n{minor}. "))
}

/// The section numbers cited after each of `markers` in `text` (`§6.2` → `6.2`).
fn cited_sections<'t>(text: &'t str, markers: &[&str]) -> Vec<&'t str> {
    let mut cited = Vec::new();
    for marker in markers {
        for (at, _) in text.match_indices(marker) {
            let rest = &text[at + marker.len()..];
            let len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
            let section = rest[..len].trim_end_matches('.');
            if !section.is_empty() {
                cited.push(section);
            }
        }
    }
    cited
}

/// The ladder steps cited in `text`: the numbers after `ladder step`/`ladder steps`, each end
/// of a range `A–B`.
fn cited_steps(text: &str) -> Vec<&str> {
    let mut steps = Vec::new();
    for (at, _) in text.match_indices("ladder step") {
        let rest = text[at + "ladder step".len()..].trim_start_matches('s').trim_start();
        let len = rest.find(|c: char| !(c.is_ascii_digit() || c == '–' || c == '-')).unwrap_or(rest.len());
        steps.extend(rest[..len].split(['–', '-']).filter(|s| !s.is_empty()));
    }
    steps
}

#[test]
fn every_reference_to_the_digest_resolves() {
    let digest = digest();
    let tags = defined_tags(&digest);
    let areas: BTreeSet<&str> = tags.iter().filter_map(|t| t.split('-').next()).collect();
    assert!(tags.contains("LSTN-4") && tags.contains("HTTP-6") && tags.contains("CACHE-6"), "{tags:?}");
    let mut files = Vec::new();
    sources(&root(), &mut files);
    let mut broken = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let name = file.strip_prefix(root()).unwrap_or(&file).display().to_string();
        for at in (0..text.len()).filter(|&i| text.is_char_boundary(i)) {
            let in_area = |t: &&str| t.split('-').next().is_some_and(|area| areas.contains(area));
            if let Some(tag) = tag_at(&text, at).filter(in_area)
                && !tags.contains(tag)
            {
                broken.push(format!("{name}: tag {tag}"));
            }
        }
        for section in cited_sections(&text, &["spec digest §", "spec §", "MCP 2026-07-28 §"]) {
            if !has_section(&digest, section) {
                broken.push(format!("{name}: §{section}"));
            }
        }
        for step in cited_steps(&text) {
            if !digest.contains(&format!("\n| {step} | ")) {
                broken.push(format!("{name}: ladder step {step}"));
            }
        }
    }
    assert!(broken.is_empty(), "references the digest does not resolve:\n{}", broken.join("\n"));
}

#[test]
fn the_resolver_tells_present_from_absent() {
    let digest = digest();
    assert!(has_section(&digest, "6") && has_section(&digest, "6.2") && has_section(&digest, "21.5"));
    assert!(!has_section(&digest, "6.9") && !has_section(&digest, "22") && !has_section(&digest, "21.40"));
    assert_eq!(tag_at("see LSTN-4.", 4), Some("LSTN-4"));
    assert_eq!(tag_at("XLSTN-4", 1), None, "part of a longer word");
    assert_eq!(tag_at("LSTN-", 0), None);
    assert_eq!(cited_steps("ladder steps 10–12, ladder step 3"), ["10", "12", "3"]);
    assert_eq!(cited_sections("(spec digest §16.3).", &["spec digest §"]), ["16.3"]);
}
