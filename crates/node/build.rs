//! Records the build's commit for the node's execution identity: `MCP_FLEET_BUILD_COMMIT`
//! from the build environment (an image build without `.git`), else `git rev-parse HEAD` when
//! the source is a git checkout; neither → no commit (the identity omits it).

#[path = "build/git_watch.rs"]
mod git_watch;

fn main() {
    println!("cargo:rerun-if-env-changed=MCP_FLEET_BUILD_COMMIT");
    let commit = std::env::var("MCP_FLEET_BUILD_COMMIT").ok().filter(|c| !c.trim().is_empty()).or_else(git_head);
    if let Some(commit) = commit {
        println!("cargo:rustc-env=MCP_FLEET_COMMIT={}", commit.trim());
    }
}

/// `git rev-parse HEAD`, and the existing files whose change moves it (so a new commit
/// rebuilds, and an unchanged checkout does not: see `build/git_watch.rs`).
fn git_head() -> Option<String> {
    let (head, watched) = git_watch::head_and_watched(std::path::Path::new("."))?;
    for file in watched {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    Some(head)
}
