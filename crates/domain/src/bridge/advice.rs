//! What a person does about a host error text: one short paragraph per kind, shared by
//! `switchboard explain-error` and the Bridge status view's explainer so both say the same.
//!
//! Why apart from the parser ([`crate::host_error`]): the parser reads values out of a text as
//! the host wrote it; this says what to do about it, which depends on how the Lumiverse host
//! behaves around the text (`lumiverse-host.md`: the 10 s shared-RPC timeout, the runtime that
//! is not restarted after it stops, the install scanner's labels), not on the text's shape.
//! Places in Lumiverse are named as its own interface names them (1.1.0): permissions are
//! granted, and an extension restarted, on the extension's card in the "Extensions" panel (its
//! "Permissions" pills, its "Restart" button), the same place the banner's fix names; the
//! settings window's "Extension Settings" only shows what extensions put there.

use crate::host_error::{HostError, HostErrorKind};

/// What to do about `e`, in plain words, or `None` for kinds whose meaning already says it (an
/// unknown text, a line's own refusals). Permission failures point at the banner, which names
/// the exact grant.
pub fn what_to_do(e: &HostError) -> Option<String> {
    let text = match &e.kind {
        HostErrorKind::Permission(p) => format!(
            "In Lumiverse, open Extensions, then {}, and grant the permissions listed ({}) under its Permissions, or ask its author to declare them; the Bridge status banner names the exact grant.",
            p.missing_extension,
            p.permissions.join(", ")
        ),
        HostErrorKind::NotRegistered { endpoint } => format!(
            "Check in Lumiverse that the extension behind {endpoint} is installed and enabled. If it was running, its process may have stopped (see \"Extension worker stopped\"): restart the extension."
        ),
        HostErrorKind::NotRegisteredForReads { endpoint } => format!(
            "The extension behind {endpoint} must register an on-request handler for it (spindle.rpcPool.handle); update the extension or tell its author."
        ),
        HostErrorKind::EndpointTimedOut { endpoint } => format!(
            "The host gives a shared-RPC handler 10 seconds. The handler of {endpoint} took longer: its caller got this error and the handler's late answer was thrown away. Its author should make the handler answer sooner (do slow work in the background and answer from a cache)."
        ),
        HostErrorKind::DialTimedOut { extension, .. } => format!(
            "{extension} did not answer LumiAgent in time: check that it is enabled and not stuck; its own dials in Live dials show how long it takes."
        ),
        HostErrorKind::WorkerStopped => "The called extension's process stopped while the call waited: usually a handler threw synchronously (outside a promise), which ends the process. Lumiverse does not restart it: open Extensions, then that extension, and press Restart (or disable and enable it). Its author should make every handler async; switchboard-tap's wrap does this for a wrapped handler.".to_string(),
        HostErrorKind::BlockedCapabilities { extension, capabilities } => format!(
            "Lumiverse refused to install or start {extension}: its backend bundle uses APIs the host blocks ({}). Nothing of it runs. Its author must remove them: {}. With switchboard-tap, import only the package's main entry, which bundles none of them.",
            capabilities.join(", "),
            capabilities
                .iter()
                .map(|c| instead_of(c))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        HostErrorKind::InvalidEndpoint { .. } | HostErrorKind::InvalidOwner { .. } => "The caller named the endpoint wrongly: an endpoint is \"<extension_id>.<channel>\" in lowercase letters, digits, \"_\" and \"-\". Tell the calling extension's author.".to_string(),
        HostErrorKind::ConnectionClosed => "The host's connection went away in the middle of the call: check that Lumiverse is running, then try again.".to_string(),
        _ => return None,
    };
    Some(text)
}

/// What the host offers instead of a blocked capability (`lumiverse-host.md`, "What the host
/// offers instead"), for one scanner label.
fn instead_of(label: &str) -> String {
    let instead = match label {
        "filesystem module access" => {
            "use spindle.storage (and spindle.enclave for secrets) instead of fs"
        }
        "direct socket module access" => {
            "use the global fetch or WebSocket instead of net, tls, http or https"
        }
        "subprocess module access" => "no subprocesses are allowed (child_process)",
        "worker or cluster module access" => "no worker_threads or cluster",
        "direct SQLite module access" => "use spindle.storage instead of bun:sqlite",
        "dangerous Bun system API usage" => {
            "no Bun.file, Bun.write, Bun.spawn, Bun.serve, Bun.connect or Bun.listen"
        }
        "dangerous process API usage" => {
            "no process.env, process.exit, process.kill or process.chdir"
        }
        "dynamic module access" => "import only constant module names",
        "dynamic code execution" => {
            "no eval or Function (or request the dynamic_code_execution capability)"
        }
        "base64 decoding" => {
            "no Buffer.from(…, \"base64\") (or request the base64_decode capability)"
        }
        other => return format!("{other}: see the host's capabilities documentation"),
    };
    format!("{label}: {instead}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_error::parse;

    #[test]
    fn the_install_refusal_names_the_extension_and_each_alternative() {
        let e = parse("Extension \"tapcheck\" uses blocked backend capabilities: filesystem module access, direct socket module access");
        let advice = what_to_do(&e).unwrap_or_default();
        assert!(
            advice.contains("refused to install or start tapcheck"),
            "{advice}"
        );
        assert!(advice.contains("use spindle.storage"), "{advice}");
        assert!(advice.contains("global fetch or WebSocket"), "{advice}");
    }

    #[test]
    fn a_stopped_worker_says_to_restart_it() {
        let advice = what_to_do(&parse("Extension worker stopped")).unwrap_or_default();
        assert!(
            advice.contains("open Extensions, then that extension, and press Restart"),
            "{advice}"
        );
    }

    #[test]
    fn an_unknown_text_has_no_advice() {
        assert_eq!(what_to_do(&parse("the moon is made of cheese")), None);
    }
}
