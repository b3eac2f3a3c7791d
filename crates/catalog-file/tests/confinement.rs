//! What a catalog file may reach outside itself: `file` resources only inside the catalog's
//! folder (or the configured root), with symlinks followed; `${VAR}` only allowlisted
//! variables. Refused at load with the position of the offending key, before the server is
//! touched; a file swapped for an escaping symlink after the load is refused at read.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod common;

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use common::{handler, rpc};
use mcp_fleet_catalog_file::{Catalog, CatalogReloader, Confinement, EnvAllowlist, Format, ReloadOptions, apply};
use mcp_fleet_server::McpServer;
use serde_json::json;

/// `dir/catalog/` holding `notes.md` and `sub/notes.md`, next to `dir/secret` (think: the
/// admin token mounted beside the catalog).
fn layout() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("catalog");
    std::fs::create_dir_all(folder.join("sub")).unwrap();
    std::fs::write(folder.join("notes.md"), "notes").unwrap();
    std::fs::write(folder.join("sub/notes.md"), "sub notes").unwrap();
    std::fs::write(dir.path().join("secret"), "SECRET-next-door").unwrap();
    (dir, folder)
}

fn resource(file: &str) -> String {
    format!("[[resources]]\nuri = \"docs://x\"\nname = \"x\"\nfile = \"{file}\"\n")
}

/// Write a catalog with `file` into `folder` and load it.
fn load(folder: &Path, file: &str) -> Result<Catalog, String> {
    let path = folder.join("catalog.toml");
    std::fs::write(&path, resource(file)).unwrap();
    Catalog::load(&path).map_err(|e| e.to_string())
}

#[test]
fn a_file_outside_the_catalogs_folder_is_refused_at_load_with_its_position() {
    let (dir, folder) = layout();
    std::os::unix::fs::symlink("../secret", folder.join("link.md")).unwrap();
    std::os::unix::fs::symlink("/etc", folder.join("etc")).unwrap();
    let secret = dir.path().join("secret");
    for file in ["/etc/passwd", "../secret", "sub/../../secret", "link.md", "etc/passwd", secret.to_str().unwrap()] {
        let err = load(&folder, file).err().unwrap_or_else(|| panic!("{file} was accepted"));
        let at = format!("{}:4:1: resources[0] \"docs://x\": file {file:?} ", folder.join("catalog.toml").display());
        assert!(err.starts_with(&at), "{file}: {err}");
        assert!(err.contains("outside"), "{file}: {err}");
    }
}

#[test]
fn files_inside_the_folder_load_whatever_their_spelling() {
    let (_dir, folder) = layout();
    let absolute = folder.join("notes.md");
    for file in ["notes.md", "./notes.md", "sub/notes.md", "sub/../notes.md", absolute.to_str().unwrap(), "later.md"] {
        assert!(load(&folder, file).is_ok(), "{file}: {:?}", load(&folder, file).err());
    }
}

#[tokio::test]
async fn a_symlink_swapped_in_after_the_load_is_refused_at_read() {
    let (_dir, folder) = layout();
    let catalog = load(&folder, "notes.md").unwrap();
    let server = McpServer::builder("confinement-test", "0.1.0").build();
    apply(&server, &catalog).await.unwrap();
    let h = handler(server).await;
    let read = rpc(&h, "resources/read", Some("docs://x"), json!({"uri": "docs://x"})).await;
    assert_eq!(read["result"]["contents"][0]["text"], "notes", "{read}");

    std::fs::remove_file(folder.join("notes.md")).unwrap();
    std::os::unix::fs::symlink("../secret", folder.join("notes.md")).unwrap();
    let read = rpc(&h, "resources/read", Some("docs://x"), json!({"uri": "docs://x"})).await;
    assert_eq!(read["error"]["code"], -32603, "{read}");
    assert!(!read.to_string().contains("SECRET"), "{read}");
}

/// An http tool whose header reads `${var}`.
fn header_tool(var: &str) -> String {
    format!(
        "[[tools]]\nname = \"t\"\nhttp = {{ url = \"http://127.0.0.1:1/\", headers = {{ X-A = \"${{{var}}}\" }} }}\n"
    )
}

#[test]
fn a_variable_outside_the_allowlist_is_refused_at_load_and_never_read() {
    let read = RefCell::new(Vec::new());
    let env = |name: &str| {
        read.borrow_mut().push(name.to_owned());
        Some("redis://default:VALUE-7f3a@redis/0".to_owned())
    };
    for var in ["MCP_FLEET_BUS", "AWS_SECRET_ACCESS_KEY", "MCP_CATALOG", "mcp_catalog_x"] {
        let err = Catalog::parse_with_env(&header_tool(var), Format::Toml, "c.toml".as_ref(), &env).unwrap_err();
        let expected = format!("c.toml:3:51: tools[0] \"t\": environment variable {var} is not allowed");
        assert!(err.to_string().starts_with(&expected), "{var}: {err}");
        assert!(!err.to_string().contains("VALUE-7f3a"), "{err}");
    }
    assert!(read.borrow().is_empty(), "a refused variable is not even looked up: {:?}", read.borrow());
    let ok = Catalog::parse_with_env(&header_tool("MCP_CATALOG_TOKEN"), Format::Toml, "c.toml".as_ref(), &env);
    assert!(ok.is_ok(), "{:?}", ok.err());
    assert_eq!(*read.borrow(), ["MCP_CATALOG_TOKEN"]);
}

#[test]
fn a_files_root_widens_where_files_may_come_from_and_narrows_it_too() {
    let (dir, folder) = layout();
    std::fs::write(dir.path().join("shared.md"), "shared").unwrap();
    let text = resource("../shared.md");
    let origin = folder.join("catalog.toml");
    let wide = Confinement { files_root: Some(dir.path().to_path_buf()), ..Confinement::default() };
    assert!(Catalog::parse_confined(&text, Format::Toml, &origin, &wide, &|_: &str| None).is_ok());
    let narrow = Confinement { files_root: Some(folder.join("sub")), ..Confinement::default() };
    let err = Catalog::parse_confined(&resource("notes.md"), Format::Toml, &origin, &narrow, &|_: &str| None);
    assert!(err.is_err_and(|e| e.to_string().contains("outside")), "notes.md is not in sub/");
    let ok = Catalog::parse_confined(&resource("sub/notes.md"), Format::Toml, &origin, &narrow, &|_: &str| None);
    assert!(ok.is_ok(), "{:?}", ok.err());
}

#[tokio::test]
async fn the_reloader_applies_its_confinement_at_every_reload() {
    let (_dir, folder) = layout();
    let path = folder.join("catalog.toml");
    std::fs::write(&path, header_tool("ORDERS_TOKEN")).unwrap();
    let server = McpServer::builder("confinement-test", "0.1.0").build();
    let reloader = CatalogReloader::try_new(server.clone(), &path, ReloadOptions::default()).unwrap();
    let err = reloader.reload_now().await.unwrap_err();
    assert!(err.to_string().contains("environment variable ORDERS_TOKEN is not allowed"), "{err}");
    let widened = ReloadOptions {
        confinement: Confinement { env: EnvAllowlist::default().widen(["ORDERS_*"]), ..Confinement::default() },
        ..ReloadOptions::default()
    };
    let reloader = CatalogReloader::try_new(server, &path, widened).unwrap();
    // Allowed, but not set in this process: the next problem is that it is missing.
    let err = reloader.reload_now().await.unwrap_err();
    assert!(err.to_string().contains("environment variable ORDERS_TOKEN is not set"), "{err}");
    std::fs::write(&path, resource("../secret")).unwrap();
    let err = reloader.reload_now().await.unwrap_err();
    assert!(err.to_string().contains(r#"resources[0] "docs://x": file "../secret" is outside"#), "{err}");
}
