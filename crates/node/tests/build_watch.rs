//! The build script watches only git files that exist (issue 32): cargo counts a watched path
//! that is absent as changed, so watching one re-linked the node on every `cargo build`. Runs
//! the build script's own path rule (`build/git_watch.rs`) on temporary repositories with loose
//! refs only, packed refs only, and a detached `HEAD` with neither.

#[path = "../build/git_watch.rs"]
mod git_watch;

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// A repository with one commit on branch `main`; its refs are loose (git packs none by itself).
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["commit", "-q", "--allow-empty", "-m", "one"]);
    dir
}

/// The watched files, each checked to exist, as names relative to the repository's `.git`.
fn watched(dir: &Path) -> Vec<String> {
    let (head, files) = git_watch::head_and_watched(dir).expect("HEAD names a commit");
    assert_eq!(head.len(), 40, "a full commit id: {head}");
    let git_dir = dir.join(".git").canonicalize().expect(".git exists");
    let mut names: Vec<String> = files
        .iter()
        .map(|file: &PathBuf| {
            assert!(file.is_file(), "watched file exists: {}", file.display());
            let file = file.canonicalize().expect("exists");
            file.strip_prefix(&git_dir).expect("inside .git").to_string_lossy().into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn loose_refs_only_watches_the_loose_ref_and_no_packed_refs() {
    let dir = repo();
    assert!(!dir.path().join(".git/packed-refs").exists());
    assert_eq!(watched(dir.path()), ["HEAD", "logs/HEAD", "refs/heads/main"]);
}

#[test]
fn packed_refs_only_watches_packed_refs_and_no_loose_ref() {
    let dir = repo();
    git(dir.path(), &["pack-refs", "--all", "--prune"]);
    assert!(!dir.path().join(".git/refs/heads/main").exists());
    assert_eq!(watched(dir.path()), ["HEAD", "logs/HEAD", "packed-refs"]);
}

#[test]
fn detached_head_with_neither_watches_head_only() {
    let dir = repo();
    git(dir.path(), &["checkout", "-q", "--detach"]);
    git(dir.path(), &["update-ref", "-d", "refs/heads/main"]);
    std::fs::remove_file(dir.path().join(".git/logs/HEAD")).expect("reflog exists");
    assert_eq!(watched(dir.path()), ["HEAD"]);
}

#[test]
fn no_commit_yields_nothing_to_watch() {
    let dir = tempfile::tempdir().expect("temp dir");
    git(dir.path(), &["init", "-q"]);
    assert!(git_watch::head_and_watched(dir.path()).is_none());
}
