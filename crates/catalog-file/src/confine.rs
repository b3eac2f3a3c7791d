//! [`Confinement`]: what a catalog file may reach outside itself. Whoever may edit the file
//! (a ConfigMap) is not necessarily whoever may read the pod's Secrets, so the file gets
//! neither by default:
//!
//! - **files**: a `file` resource (relative to the catalog's folder) must resolve —
//!   lexically, and with symlinks followed when it exists — inside that folder, or inside the
//!   configured root (`FilesRoot`); the check is repeated at every read, so a symlink swapped
//!   in later is refused too;
//! - **environment**: `${VAR}` may only name variables of the [`EnvAllowlist`], by default
//!   those starting `MCP_CATALOG_`; any other is an error before its value is even looked up;
//! - **addresses**: `http` tools may not connect to link-local and cloud metadata addresses
//!   (the instance's credentials live there) unless `allow_link_local` says so; enforced at
//!   call time, before any connection (`egress`).
//!
//! Both are load errors with the position of the offending key, like every other problem.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::error::Problem;

/// What a catalog file may reach. The default: files in its own folder, variables named
/// `MCP_CATALOG_*`, no link-local or cloud metadata address.
///
/// ```
/// use mcp_fleet_catalog_file::{Confinement, EnvAllowlist};
/// let confinement = Confinement {
///     files_root: Some("/etc/mcp".into()),
///     env: EnvAllowlist::default().widen(["ORDERS_TOKEN", "PAYMENTS_*"]),
///     allow_link_local: false,
/// };
/// assert!(confinement.env.allows("PAYMENTS_KEY") && confinement.env.allows("MCP_CATALOG_X"));
/// assert!(!confinement.env.allows("MCP_FLEET_BUS"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// The folder `file` resources must resolve into; `None`: the catalog file's folder.
    pub files_root: Option<PathBuf>,
    /// The variables `${VAR}` may read.
    pub env: EnvAllowlist,
    /// Let `http` tools reach link-local addresses (169.254.0.0/16, fe80::/10) and the cloud
    /// metadata endpoints (169.254.169.254, fd00:ec2::254, 100.100.100.200,
    /// metadata.google.internal). Off: refused before any connection, after DNS resolution.
    pub allow_link_local: bool,
}

impl Confinement {
    /// Whether `file` is inside the folder the `file` resources of the catalog at `catalog` may
    /// read (or is that folder), lexically or once symlinks are followed: a secret there could
    /// be served to any caller, so a node refuses to start that way.
    ///
    /// ```
    /// use mcp_fleet_catalog_file::Confinement;
    /// let confinement = Confinement { files_root: Some("/etc/mcp".into()), ..Confinement::default() };
    /// assert!(confinement.reaches("/etc/mcp/catalog/c.toml".as_ref(), "/etc/mcp/admin-token/token".as_ref()));
    /// assert!(!Confinement::default().reaches("/etc/mcp/catalog/c.toml".as_ref(), "/etc/mcp/admin-token/token".as_ref()));
    /// ```
    pub fn reaches(&self, catalog: &Path, file: &Path) -> bool {
        let files = FilesRoot::new(self.files_root.as_deref(), catalog.parent().unwrap_or(Path::new("")));
        absolute(file).starts_with(&files.root) || files.check_real(file).is_ok()
    }
}

/// Which environment variables a catalog may read: exact names, and `PREFIX*` patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvAllowlist {
    patterns: Vec<String>,
}

impl EnvAllowlist {
    /// The pattern always allowed.
    pub const DEFAULT: &'static str = "MCP_CATALOG_*";

    /// [`DEFAULT`](Self::DEFAULT) plus `patterns` (names, or prefixes ending in `*`; blank
    /// entries are ignored).
    pub fn widen<S: AsRef<str>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        for pattern in patterns {
            let pattern = pattern.as_ref().trim();
            if !pattern.is_empty() && !self.patterns.iter().any(|p| p == pattern) {
                self.patterns.push(pattern.to_owned());
            }
        }
        self
    }

    /// Whether `${name}` may be read. A bare `*` allows everything, as written.
    pub fn allows(&self, name: &str) -> bool {
        self.patterns.iter().any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == pattern,
        })
    }
}

impl Default for EnvAllowlist {
    fn default() -> Self {
        EnvAllowlist { patterns: vec![EnvAllowlist::DEFAULT.to_owned()] }
    }
}

impl fmt::Display for EnvAllowlist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.patterns.join(", "))
    }
}

/// Where relative `file` paths start (the catalog's folder) and the folder they must resolve
/// into (the same, or the configured root), both absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FilesRoot {
    base: PathBuf,
    root: PathBuf,
}

impl FilesRoot {
    /// Files relative to `catalog_dir`, confined to `configured` or else to `catalog_dir`;
    /// relative folders are relative to the working directory.
    pub(crate) fn new(configured: Option<&Path>, catalog_dir: &Path) -> FilesRoot {
        let base = absolute(catalog_dir);
        FilesRoot { root: configured.map_or_else(|| base.clone(), absolute), base }
    }

    /// `file` (relative to the catalog's folder) as the absolute path to read, if it is
    /// inside the root: lexically (no `..` out of it, no absolute path elsewhere) and, if it
    /// exists, once its symlinks are followed.
    pub(crate) fn resolve(&self, file: &Path) -> Result<PathBuf, Problem> {
        let path = normalize(&self.base.join(file));
        if !path.starts_with(&self.root) {
            return Err(self.outside(file, "its path leaves it"));
        }
        if path.exists() {
            self.check_real(&path).map_err(|why| self.outside(file, why))?;
        }
        Ok(path)
    }

    /// Whether `path`, symlinks followed, is inside the root (its symlinks followed too);
    /// `Err` says why not. A path that does not exist is not inside anything.
    pub(crate) fn check_real(&self, path: &Path) -> Result<PathBuf, &'static str> {
        let real = path.canonicalize().map_err(|_| "it cannot be resolved")?;
        let root = self.root.canonicalize().unwrap_or_else(|_| self.root.clone());
        if real.starts_with(&root) { Ok(real) } else { Err("a symlink leads out of it") }
    }

    fn outside(&self, file: &Path, why: &'static str) -> Problem {
        Problem::FileOutsideRoot { file: file.display().to_string(), root: self.root.display().to_string(), why }
    }
}

/// `dir` as a normalized absolute path (`""` is the working directory).
fn absolute(dir: &Path) -> PathBuf {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    normalize(&std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()))
}

/// `path` with `.` removed and each `..` taking away the component before it (never past the
/// root), without touching the filesystem.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalized_without_the_filesystem() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(normalize(Path::new("/a/../../..")), Path::new("/"));
    }

    #[test]
    fn lexical_escapes_are_refused_even_for_files_that_do_not_exist() {
        let root = FilesRoot::new(None, Path::new("/nonexistent/catalog"));
        assert_eq!(root.resolve(Path::new("a/b.md")).unwrap(), Path::new("/nonexistent/catalog/a/b.md"));
        assert_eq!(root.resolve(Path::new("/nonexistent/catalog/x")).unwrap(), Path::new("/nonexistent/catalog/x"));
        for escape in ["../x", "a/../../x", "/etc/passwd", "/nonexistent/catalogue/x"] {
            assert!(matches!(root.resolve(Path::new(escape)), Err(Problem::FileOutsideRoot { .. })), "{escape}");
        }
        let wider = FilesRoot::new(Some(Path::new("/nonexistent")), Path::new("/nonexistent/catalog"));
        assert_eq!(wider.resolve(Path::new("../x")).unwrap(), Path::new("/nonexistent/x"), "relative to the catalog");
        let narrower = FilesRoot::new(Some(Path::new("/nonexistent/catalog/docs")), Path::new("/nonexistent/catalog"));
        assert!(narrower.resolve(Path::new("docs/a.md")).is_ok() && narrower.resolve(Path::new("a.md")).is_err());
    }

    #[test]
    fn a_file_is_reached_lexically_or_through_symlinks() {
        let root = |root: &str| Confinement { files_root: Some(root.into()), ..Confinement::default() };
        let catalog = Path::new("/etc/mcp/catalog/c.toml");
        let token = Path::new("/etc/mcp/admin-token/token");
        assert!(root("/etc/mcp").reaches(catalog, token) && root("/etc/mcp/admin-token/").reaches(catalog, token));
        assert!(root("/").reaches(catalog, token));
        assert!(Confinement::default().reaches(catalog, Path::new("/etc/mcp/catalog/../catalog/token")));
        assert!(
            !root("/etc/mcp/admin-tokens").reaches(catalog, token) && !Confinement::default().reaches(catalog, token)
        );
        // A Secret mount (token -> ..data/token, ..data -> ..2026_12_04/) under a symlinked root.
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path();
        std::fs::create_dir_all(dir.join("secret/..2026_12_04")).expect("dirs");
        std::fs::write(dir.join("secret/..2026_12_04/token"), "t").expect("write");
        std::os::unix::fs::symlink("..2026_12_04", dir.join("secret/..data")).expect("symlink");
        std::os::unix::fs::symlink("..data/token", dir.join("secret/token")).expect("symlink");
        std::os::unix::fs::symlink(dir.join("secret"), dir.join("files")).expect("symlink");
        let files = root(dir.join("files").to_str().expect("utf-8"));
        assert!(files.reaches(&dir.join("elsewhere/c.toml"), &dir.join("secret/token")), "through the root's symlink");
        assert!(!root(dir.join("elsewhere").to_str().expect("utf-8")).reaches(catalog, &dir.join("secret/token")));
    }

    #[test]
    fn the_allowlist_takes_names_and_prefixes() {
        let allow = EnvAllowlist::default().widen(["ORDERS_TOKEN", " ", "API_*"]);
        for yes in ["MCP_CATALOG_A", "MCP_CATALOG_", "ORDERS_TOKEN", "API_KEY"] {
            assert!(allow.allows(yes), "{yes}");
        }
        for no in ["ORDERS_TOKEN2", "MCP_FLEET_BUS", "HOME", "mcp_catalog_a"] {
            assert!(!allow.allows(no), "{no}");
        }
        assert_eq!(allow.to_string(), "MCP_CATALOG_*, ORDERS_TOKEN, API_*");
        assert!(EnvAllowlist::default().widen(["*"]).allows("HOME"));
    }
}
