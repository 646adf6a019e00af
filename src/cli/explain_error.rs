//! `switchboard explain-error [TEXT] [--manifests DIR] [--caller ID] [--endpoint E] [--json]`:
//! classifies a host or phone-line error text and, for a permission failure, prints the bridge
//! banner (spec `phone-line.md`, "Failure modes and the bridge banner").
//!
//! Without `--manifests` the manifests built into the app (LumiAgent's and LumiRealm's,
//! [`switchboard::bridge::explain::builtin_extensions`]) are used, the same directory the Bridge
//! view uses when no phone has sent its own, so the banner never asks to grant a permission the
//! named extension does not declare (those are listed apart as "cannot be granted"); only an
//! extension with neither kind of manifest is unchecked, and the output says so. With
//! `--manifests DIR`, every `*.json` file there that is an extension (`spindle.json`) manifest
//! is loaded instead; other JSON is skipped with a note on stderr (or in the JSON output).

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;
use switchboard::bridge::explain::{assumed_path, builtin_extensions};
use switchboard::bridge::{derive_banner, Derived, ExtensionDirectory};
use switchboard::clock::{Clock as _, SystemClock};
use switchboard::host_error::{self, HostError, HostErrorKind, PermissionForm};
use switchboard::phone_line::protocol::OpOutcome;

use super::CliResult;

/// Longest text read from standard input, in bytes (1 MiB).
const MAX_STDIN_BYTES: u64 = 1024 * 1024;

/// Arguments of `switchboard explain-error`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The error text; read from standard input when absent (trailing line break dropped).
    text: Option<String>,
    /// A folder of extension manifests (`spindle.json` files, any name ending `.json`) used
    /// instead of the built-in LumiAgent and LumiRealm manifests; the banner offers only
    /// permissions the missing extension declares.
    #[arg(long, value_name = "DIR")]
    manifests: Option<PathBuf>,
    /// The extension id that made the failed call (default: the requester the text names).
    #[arg(long, value_name = "ID")]
    caller: Option<String>,
    /// The endpoint that was called (default: the endpoint the text names).
    #[arg(long, value_name = "ENDPOINT")]
    endpoint: Option<String>,
    /// Print one JSON object: `{classification, banner, no_banner, manifests}`, where
    /// `manifests` is `{source: "builtin" | "dir", loaded, skipped}`.
    #[arg(long)]
    json: bool,
}

/// Runs `switchboard explain-error`.
pub(crate) fn run(args: Args) -> CliResult {
    let text = match args.text {
        Some(t) => t,
        None => read_stdin()?,
    };
    // An empty text has nothing to classify: "kind: unknown" would read as a finding.
    if text.trim().is_empty() {
        return Err(
            "no error text given: pass it as an argument or on standard input \
                    (switchboard explain-error \"<the error text>\")"
                .into(),
        );
    }
    let dir = match &args.manifests {
        Some(path) => ExtensionDirectory::load_dir(path).map_err(|e| e.to_string())?,
        None => builtin_extensions(),
    };
    let error = host_error::parse(&text);
    let path = assumed_path(&error, args.caller.as_deref(), args.endpoint.as_deref());
    let at_ms = SystemClock.now_ms();
    let derived = derive_banner(&path, &error, &dir, at_ms);

    if args.json {
        let (banner, no_banner) = match &derived {
            Derived::Banner(b) => (serde_json::to_value(b).map_err(|e| e.to_string())?, None),
            Derived::NothingGrantable {
                missing_extension,
                not_grantable,
            } => (
                serde_json::Value::Null,
                Some(json!({
                    "reason": "nothing_grantable",
                    "missing_extension": missing_extension,
                    "not_grantable": not_grantable,
                })),
            ),
            Derived::NotPermission => (
                serde_json::Value::Null,
                Some(json!({ "reason": "not_permission" })),
            ),
        };
        let manifests = json!({
            "source": if args.manifests.is_some() { "dir" } else { "builtin" },
            "loaded": dir.manifests().map(|m| m.identifier.clone()).collect::<Vec<_>>(),
            "skipped": dir.skipped(),
        });
        let out = json!({
            "classification": error,
            "banner": banner,
            "no_banner": no_banner,
            "manifests": manifests,
            "what_to_do": switchboard::bridge::advice::what_to_do(&error),
        });
        let s = serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?;
        println!("{s}");
        return Ok(ExitCode::SUCCESS);
    }

    for s in dir.skipped() {
        eprintln!("switchboard: skipped {}: {}", s.file, s.reason);
    }
    print_classification(&error);
    match derived {
        Derived::Banner(b) => {
            println!("banner: {}", b.message);
            println!("fix: {}", b.fix);
            if !b.not_grantable.is_empty() {
                println!(
                    "cannot be granted to {} (not declared in its manifest; do not ask for them): {}",
                    b.missing_name,
                    b.not_grantable.join(", ")
                );
            }
            if !b.manifest_checked {
                let hint = if args.manifests.is_some() {
                    "add its spindle.json to the --manifests folder"
                } else {
                    "pass --manifests DIR with its spindle.json"
                };
                println!(
                    "note: permissions not checked against {}'s manifest ({hint})",
                    b.missing_name
                );
            }
        }
        Derived::NothingGrantable {
            missing_extension,
            not_grantable,
        } => println!(
            "no banner: {} declares none of {}, so none can be granted (the call still failed)",
            dir.display_name(&missing_extension),
            not_grantable.join(", ")
        ),
        Derived::NotPermission => println!("no banner: not a permission failure"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads the error text from standard input, at most [`MAX_STDIN_BYTES`].
fn read_stdin() -> Result<String, String> {
    let mut buf = Vec::new();
    std::io::stdin()
        .take(MAX_STDIN_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("could not read standard input: {e}"))?;
    if buf.len() as u64 > MAX_STDIN_BYTES {
        return Err(format!(
            "standard input is longer than {MAX_STDIN_BYTES} bytes; pass a single error text"
        ));
    }
    let text = String::from_utf8_lossy(&buf);
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

fn print_classification(e: &HostError) {
    match &e.kind {
        HostErrorKind::Permission(p) => {
            let form = match p.form {
                PermissionForm::Inherit => "inherit",
                PermissionForm::Requester => "requester",
                PermissionForm::Owner => "owner",
            };
            println!("kind: permission ({form} form)");
            println!("endpoint: {}", p.endpoint);
            println!("missing extension: {}", p.missing_extension);
            println!("owner: {}", p.owner);
            println!("permissions: {}", p.permissions.join(", "));
        }
        HostErrorKind::NotRegistered { endpoint } => {
            println!("kind: {}", e.kind_name());
            println!("endpoint: {endpoint}");
            println!(
                "meaning: nothing answers there; the extension is not installed or not running"
            );
        }
        HostErrorKind::NotRegisteredForReads { endpoint } => {
            println!("kind: {}", e.kind_name());
            println!("endpoint: {endpoint}");
            println!(
                "meaning: the extension is running but has no on-request handler for this endpoint"
            );
        }
        HostErrorKind::EndpointTimedOut { endpoint }
        | HostErrorKind::InvalidEndpoint { endpoint } => {
            println!("kind: {}", e.kind_name());
            println!("endpoint: {endpoint}");
        }
        HostErrorKind::InvalidOwner { owner } => {
            println!("kind: {}", e.kind_name());
            println!("owner: {owner}");
        }
        HostErrorKind::DialTimedOut {
            extension,
            timeout_ms,
        } => {
            println!("kind: {}", e.kind_name());
            println!("extension: {extension}");
            println!("timeout: {timeout_ms} ms");
        }
        HostErrorKind::UnknownOp {
            op,
            protocol_op,
            follows,
        } => {
            println!("kind: {}", e.kind_name());
            println!("op: {op}");
            let name = protocol_op.map_or(op.as_str(), |o| o.as_str());
            println!(
                "meaning: this line does not support {name}; {}",
                follows_words(*follows, protocol_op.is_some())
            );
        }
        HostErrorKind::UnknownSurface { surface } => {
            println!("kind: {}", e.kind_name());
            println!("surface: {surface}");
        }
        HostErrorKind::InvalidPattern { detail } => {
            println!("kind: {}", e.kind_name());
            println!("detail: {detail}");
        }
        HostErrorKind::ModuleNotFound { module } => {
            println!("kind: {}", e.kind_name());
            println!("module: {module}");
        }
        HostErrorKind::RefusedByExtension { reason } => {
            println!("kind: {}", e.kind_name());
            println!("reason: {reason}");
        }
        HostErrorKind::BlockedCapabilities {
            extension,
            capabilities,
        } => {
            println!("kind: {}", e.kind_name());
            println!("extension: {extension}");
            println!("blocked: {}", capabilities.join(", "));
        }
        HostErrorKind::WorkerStopped => {
            println!("kind: {}", e.kind_name());
            println!("meaning: the called extension's process stopped while the call waited");
        }
        _ => println!("kind: {}", e.kind_name()),
    }
    for w in &e.wrapped_by {
        println!("wrapped by: {w}");
    }
    if let Some(advice) = switchboard::bridge::advice::what_to_do(e) {
        println!("what to do: {advice}");
    }
}

/// What follows from a line not supporting an op, in words (`phone-line.md`, "Operations").
/// `protocol` is false for an op outside the eight of the core protocol.
fn follows_words(follows: OpOutcome, protocol: bool) -> &'static str {
    match follows {
        OpOutcome::PairingFails => "describe is the one required op, so the line cannot be paired",
        OpOutcome::ContributesNothing => "it contributes nothing to LumiAgent's system prompt",
        OpOutcome::Allow => "LumiAgent allows the read or write, as if the line had said ok",
        OpOutcome::ToolError if protocol => "the agent's tool call fails with a tool error",
        OpOutcome::ToolError => {
            "not an op of the core protocol; the agent tool that dialled it gets a tool error"
        }
        OpOutcome::UseResponse => "the line's answer is used",
    }
}
