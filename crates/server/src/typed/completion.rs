//! Completers of typed prompts' arguments and typed templates' variables
//! (`.complete(name, handler)`): a handler `|prefix: String|` or
//! `|prefix: String, request: CompletionRequest|` answering `Vec<String>` or
//! [`CompletionValues`] (anything [`IntoAnswer<CompletionValues>`]). The name is checked
//! against the entry's type when the entry is built, so a typo is a registration error.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::FutureExt as _;
use mcp_fleet_protocol::RpcError;

use super::answer::IntoAnswer;
use super::handler::TypedHandler;
use crate::catalog::{Completers, CompletionFn, CompletionRequest, CompletionValues};
use crate::outcome::Outcome;

impl IntoAnswer<CompletionValues> for Vec<String> {
    fn into_answer(self) -> Result<Outcome<CompletionValues>, RpcError> {
        Ok(Outcome::Complete(CompletionValues { values: self, ..CompletionValues::default() }))
    }
}

/// The completers one entry is being built with.
#[derive(Default)]
pub(crate) struct CompleterSet(HashMap<String, CompletionFn>);

impl CompleterSet {
    /// Complete `name` with `handler`.
    pub(crate) fn insert<M, H>(&mut self, name: String, handler: H)
    where
        H: TypedHandler<String, CompletionRequest, M>,
        <H::Future as Future>::Output: IntoAnswer<CompletionValues>,
    {
        let complete: CompletionFn = Arc::new(move |request: CompletionRequest| {
            let answer = handler.call(request.value.clone(), request);
            async move {
                match answer.await.into_answer()? {
                    Outcome::Complete(values) => Ok(values),
                    Outcome::InputRequired(_) => Err(RpcError::internal("A completion cannot ask for input")),
                }
            }
            .boxed()
        });
        self.0.insert(name, complete);
    }

    /// The catalog's form.
    pub(crate) fn into_completers(self) -> Completers {
        Arc::new(self.0)
    }
}
