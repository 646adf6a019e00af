//! Builds the Tauri context from the root `tauri.conf.json` (see
//! ../shared/notes/tauri-on-this-machine.md: the config lives at the repository root).

fn main() {
    let attributes = tauri_build::Attributes::new()
        .config_path("../tauri.conf.json")
        .codegen(tauri_build::CodegenContext::new());
    if let Err(e) = tauri_build::try_build(attributes) {
        println!("cargo:warning=tauri build failed: {e:#}");
        std::process::exit(1);
    }
}
