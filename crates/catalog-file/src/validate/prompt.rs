//! One `[[prompts]]` entry: unique argument names, and either one `text` (a user message) or
//! a non-empty list of `messages`, every template using declared arguments only.

use mcp_fleet_server::types::{Prompt, PromptArgument, Role};

use super::display;
use super::file::{Flaw, check_name, checked_template};
use crate::catalog::PromptEntry;
use crate::error::Problem;
use crate::format::FilePrompt;
use crate::parse::PathSeg;

/// Check one prompt.
pub(crate) fn prompt(p: FilePrompt) -> Result<PromptEntry, Flaw> {
    check_name(&p.name)?;
    let mut arguments: Vec<PromptArgument> = Vec::with_capacity(p.arguments.len());
    for (i, a) in p.arguments.into_iter().enumerate() {
        if arguments.iter().any(|known| known.name == a.name) {
            return Err(Flaw::at([PathSeg::from("arguments"), i.into()], Problem::DuplicateArgument(a.name)));
        }
        arguments.push(PromptArgument {
            name: a.name,
            title: a.title,
            description: a.description,
            required: a.required,
        });
    }
    let declared: Vec<&str> = arguments.iter().map(|a| a.name.as_str()).collect();
    let messages = match (p.text, p.messages) {
        (Some(text), None) => vec![(Role::User, checked_template(&text, &declared, &["text"])?)],
        (None, Some(messages)) if messages.is_empty() => {
            return Err(Flaw::at(["messages"], Problem::NoMessages));
        }
        (None, Some(messages)) => {
            let mut out = Vec::with_capacity(messages.len());
            for (i, m) in messages.into_iter().enumerate() {
                let path = [PathSeg::from("messages"), i.into(), "text".into()];
                out.push((m.role, checked_template(&m.text, &declared, &path)?));
            }
            out
        }
        _ => return Err(Flaw::at::<&str>([], Problem::ExactlyOne("text", "messages"))),
    };
    let icons = display::icons(p.icons)?;
    let def = Prompt { name: p.name, title: p.title, description: p.description, arguments, icons, meta: p.meta };
    Ok(PromptEntry { def, messages })
}
