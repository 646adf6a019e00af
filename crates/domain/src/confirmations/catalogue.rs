//! The tool list bundled with Switchboard (the OpenPhone ifp/1 tools) and the lookup of a proposed
//! tool's details in a tool list ([`ToolInfo`]).
//!
//! Why a module of its own: the mirror shows each proposal's tool with what the phone's tool list
//! says about it; where that list comes from and how a name is looked up is one concern.

use serde_json::Value;

use super::view::ToolInfo;
use crate::phone_action;
use crate::runtime::{Access, ConfirmationPolicy, RuntimeError, ToolCatalogue};

/// The description shown for the `phone_action` tool (the server's own tool, not in any phone's
/// tool list).
pub(super) const PHONE_ACTION_DESCRIPTION: &str = "Do something on the person's phone (alarm, timer, route, draft, ...): the phone shows a card and does nothing until the person confirms it there.";

/// The tool name of the `phone_action` tool (`phone-actions.md`).
pub const PHONE_ACTION_TOOL: &str = "phone_action";

/// The OpenPhone ifp/1 tool list bundled with Switchboard (`data/openphone-tools.ifp1.json`, a
/// byte-identical copy of `corpus/ifp1/openphone-tools.ifp1.json`, checked by a test).
pub const BUNDLED_TOOLS_JSON: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../data/openphone-tools.ifp1.json"
));

/// The bundled OpenPhone tool list as a [`ToolCatalogue`] (37 tools).
///
/// # Errors
/// [`RuntimeError`] if the bundled file does not parse (a build problem, caught by tests).
pub fn bundled_catalogue() -> Result<ToolCatalogue, RuntimeError> {
    let value: Value =
        serde_json::from_str(BUNDLED_TOOLS_JSON).map_err(|e| RuntimeError::Invalid {
            problems: vec![crate::runtime::Problem {
                file: crate::runtime::tools::TOOLS_FILE.to_string(),
                path: String::new(),
                message: format!("bundled tool list is not JSON: {e}"),
            }],
        })?;
    ToolCatalogue::parse(&value, crate::runtime::tools::TOOLS_FILE)
}

/// The tool `name` with its details from `catalogue`; `phone_action` (the server's own tool) is
/// always known; a tool not in the list (or with no list) is `known: false`.
pub(super) fn tool_info(catalogue: Option<&ToolCatalogue>, name: &str) -> ToolInfo {
    if name == PHONE_ACTION_TOOL {
        return ToolInfo {
            name: name.to_string(),
            known: true,
            description: Some(PHONE_ACTION_DESCRIPTION.to_string()),
            risk: None,
            capability: Some(phone_action::PHONE.capability.to_string()),
            old_confirmation: Some(ConfirmationPolicy::Always),
            access: Some(Access::Mutating),
        };
    }
    match catalogue.and_then(|c| c.get(name)) {
        Some(t) => ToolInfo {
            name: name.to_string(),
            known: true,
            description: Some(t.description.clone()),
            risk: Some(t.risk),
            capability: Some(t.capability.clone()),
            old_confirmation: t.old_confirmation,
            access: Some(t.access),
        },
        None => ToolInfo {
            name: name.to_string(),
            known: false,
            description: None,
            risk: None,
            capability: None,
            old_confirmation: None,
            access: None,
        },
    }
}
