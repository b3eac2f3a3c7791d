//! One `[[resources]]` entry (an absolute URI; inline `text` or a `file` path, resolved
//! against the catalog's directory — it must stay inside the allowed folder — and read later,
//! at each request) and one
//! `[[resource_templates]]` entry (a valid URI template whose variables its `text` may use).

use mcp_fleet_server::types::{Resource, ResourceTemplate};

use super::display;
use super::file::{Context, Flaw, checked_template};
use crate::catalog::{ResourceEntry, ResourceSource, TemplateEntry};
use crate::error::Problem;
use crate::format::{FileResource, FileResourceTemplate};
use crate::template::uri_template_variables;

/// Check one resource.
pub(crate) fn resource(r: FileResource, cx: &Context<'_>) -> Result<ResourceEntry, Flaw> {
    if let Err(e) = reqwest::Url::parse(&r.uri) {
        return Err(Flaw::at(["uri"], Problem::Uri { uri: r.uri.clone(), reason: e.to_string() }));
    }
    let source = match (r.text, r.file) {
        (Some(text), None) => ResourceSource::Text(text),
        (None, Some(file)) => {
            let path = cx.files.resolve(&file).map_err(|problem| Flaw::at(["file"], problem))?;
            ResourceSource::File { path, root: cx.files.clone() }
        }
        _ => return Err(Flaw::at::<&str>([], Problem::ExactlyOne("text", "file"))),
    };
    let def = Resource {
        uri: r.uri,
        name: r.name,
        title: r.title,
        description: r.description,
        mime_type: r.mime_type,
        size: r.size,
        annotations: r.annotations.map(display::resource_annotations).transpose()?,
        icons: display::icons(r.icons)?,
        meta: r.meta,
    };
    Ok(ResourceEntry { def, source, contents_meta: r.contents_meta })
}

/// Check one resource template.
pub(crate) fn template(t: FileResourceTemplate) -> Result<TemplateEntry, Flaw> {
    let variables =
        uri_template_variables(&t.uri_template).ok_or_else(|| Flaw::at(["uri_template"], Problem::UriTemplate))?;
    let declared: Vec<&str> = variables.iter().map(String::as_str).collect();
    let text = checked_template(&t.text, &declared, &["text"])?;
    let def = ResourceTemplate {
        uri_template: t.uri_template,
        name: t.name,
        title: t.title,
        description: t.description,
        mime_type: t.mime_type,
        annotations: t.annotations.map(display::resource_annotations).transpose()?,
        icons: display::icons(t.icons)?,
        meta: t.meta,
    };
    Ok(TemplateEntry { def, text, contents_meta: t.contents_meta })
}
