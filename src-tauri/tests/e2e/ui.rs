//! Driving the real window through WebDriver: waits on the page's state, clicks and keys as a
//! person would, screenshots, the console-error trap and the accessibility checks.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde_json::Value;

use super::env::{target_dir, R};

/// Default bound of a wait on the page.
pub const WAIT: Duration = Duration::from_secs(30);

/// Drawn without accelerated compositing (the app's default), a still page paints nothing and
/// WebKitWebDriver can wait for ever for its next presentation update; a 1x1 px square in the
/// bottom right corner that changes colour every frame keeps the page painting (its cost is a
/// one-pixel repaint a frame, counted in journey 8's frame gaps).
const KEEP_PAINTING: &str = r#"
if (!document.getElementById('__e2e_keep_painting')) {
  const st = document.createElement('style');
  st.textContent = '@keyframes __e2e_kp { from { background: #000; } to { background: #fff; } }';
  document.head.appendChild(st);
  const d = document.createElement('div');
  d.id = '__e2e_keep_painting';
  d.setAttribute('aria-hidden', 'true');
  d.style.cssText = 'position:fixed;right:0;bottom:0;width:1px;height:1px;pointer-events:none;z-index:99999;animation:__e2e_kp 1s linear infinite alternate';
  document.body.appendChild(d);
}
return true;
"#;

/// `body` with a first line that notes, while journey 8's frame recorder runs, when the harness
/// ran a script in the page (`window.__raf.marks`): the frame gaps a harness script fell in are
/// told apart from the app's own.
fn marked(body: &str) -> String {
    format!(
        "if (window.__raf && window.__raf.on) window.__raf.marks.push(performance.now());\n{body}"
    )
}

/// Installed once per page load: records console.error, uncaught errors and unhandled
/// rejections into `window.__e2e.errors`, and gives the checks below their helpers.
const PAGE_HELPERS: &str = r#"
if (!window.__e2e) {
  const errors = [];
  const fmt = (a) => {
    try {
      if (a instanceof Error) return a.stack || a.message;
      return typeof a === "string" ? a : JSON.stringify(a);
    } catch (_) { return String(a); }
  };
  const orig = console.error.bind(console);
  console.error = (...a) => { errors.push("console.error: " + a.map(fmt).join(" ")); orig(...a); };
  window.addEventListener("error", (e) => errors.push("error: " + (e.message || fmt(e.error))));
  window.addEventListener("unhandledrejection", (e) => errors.push("unhandledrejection: " + fmt(e.reason)));
  const vis = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const text = (el) => (el.innerText || el.textContent || "").replace(/\s+/g, " ").trim();
  // Accessible name, in the order the accname rules give (simplified): aria-labelledby,
  // aria-label, a <label>, then the element's own text or title.
  const name = (el) => {
    const lb = el.getAttribute("aria-labelledby");
    if (lb) {
      const t = lb.split(/\s+/).map((id) => { const r = document.getElementById(id); return r ? text(r) : ""; }).join(" ").trim();
      if (t) return t;
    }
    const al = (el.getAttribute("aria-label") || "").trim();
    if (al) return al;
    if (el.labels && el.labels.length) {
      const t = [...el.labels].map(text).join(" ").trim();
      if (t) return t;
    }
    if (!["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName)) {
      const t = text(el);
      if (t) return t;
    } else if (el.tagName === "INPUT" && ["submit", "button", "reset"].includes(el.type) && el.value) {
      return el.value;
    }
    return (el.getAttribute("title") || "").trim();
  };
  const INTERACTIVE = "button, a, input:not([type=hidden]), select, textarea, [role=button], [role=menuitem], summary, [tabindex]:not([tabindex='-1']):not(main)";
  window.__e2e = {
    errors, name, vis, text,
    offenders: () => [...document.querySelectorAll(INTERACTIVE)].filter((el) => !name(el)).map((el) => el.outerHTML.slice(0, 200)),
    controls: () => [...document.querySelectorAll("button, [role=button], [role=menuitem], input[type=submit], input[type=button], a")]
      .map((el) => ({ name: name(el), text: text(el), title: el.getAttribute("title") || "", local_dialog: !!el.closest("dialog, [role=alertdialog]") })),
    find: (sel, label) => [...document.querySelectorAll(sel)].find((el) => vis(el) && (name(el) === label || text(el) === label)) || null,
    mark: (el) => {
      document.querySelectorAll("[data-e2e]").forEach((x) => x.removeAttribute("data-e2e"));
      if (!el) return false;
      el.setAttribute("data-e2e", "1");
      return true;
    },
    dd: (label) => {
      const dt = [...document.querySelectorAll("dt")].find((d) => d.textContent.trim() === label);
      return dt && dt.nextElementSibling ? dt.nextElementSibling.textContent.trim() : null;
    },
  };
}
return true;
"#;

/// One session with the app's window, for one journey.
pub struct Ui {
    pub c: Client,
    journey: String,
    shot_no: u32,
    /// Screenshots taken, in order.
    pub shots: Vec<PathBuf>,
}

/// Where the screenshots go: `target/e2e-shots/`.
pub fn shots_dir() -> PathBuf {
    target_dir().join("e2e-shots")
}

impl Ui {
    /// Wraps a fresh session; removes this journey's screenshots of an earlier run.
    pub fn new(c: Client, journey: &str) -> Self {
        Self {
            c,
            journey: journey.to_string(),
            shot_no: 0,
            shots: Vec::new(),
        }
    }

    /// Deletes the journey's old screenshots (call once per journey).
    pub fn clear_old_shots(journey: &str) {
        let dir = shots_dir();
        let _ = std::fs::create_dir_all(&dir);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                if n.starts_with(&format!("{journey}-")) && n.ends_with(".png") {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }

    /// Continues numbering after a restart.
    pub fn continue_from(mut self, earlier: &Ui) -> Self {
        self.journey = earlier.journey.clone();
        self.shot_no = earlier.shot_no;
        self.shots = earlier.shots.clone();
        self
    }

    /// Runs `body` (a function body) with `args` in the page.
    pub async fn js(&self, body: &str, args: Vec<Value>) -> R<Value> {
        self.c
            .execute(&marked(body), args)
            .await
            .map_err(|e| format!("script failed: {e}\nscript: {}", body.trim()))
    }

    /// Waits until the page has loaded the app, then installs the helpers and error trap.
    pub async fn start(&self) -> R<()> {
        self.wait(
            "the app's sidebar",
            WAIT,
            "return !!document.querySelector('nav.sidebar button')",
        )
        .await?;
        self.js(PAGE_HELPERS, vec![]).await?;
        if std::env::var("WEBKIT_DISABLE_COMPOSITING_MODE").as_deref() == Ok("1") {
            self.js(KEEP_PAINTING, vec![]).await?;
        }
        Ok(())
    }

    /// Polls `body` (returns a value) until it is truthy; returns that value.
    pub async fn wait(&self, what: &str, limit: Duration, body: &str) -> R<Value> {
        let deadline = Instant::now() + limit;
        let mut last;
        loop {
            match self.c.execute(&marked(body), vec![]).await {
                Ok(v) => {
                    let truthy = match &v {
                        Value::Null => false,
                        Value::Bool(b) => *b,
                        Value::String(s) => !s.is_empty(),
                        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
                        _ => true,
                    };
                    if truthy {
                        return Ok(v);
                    }
                    last = v;
                }
                Err(e) => last = Value::String(format!("script error: {e}")),
            }
            if Instant::now() > deadline {
                let view = self.main_text().await.unwrap_or_default();
                let view: String = view.chars().take(1500).collect();
                return Err(format!(
                    "waited {limit:?} for {what}; last answer {last}\n--- the view showed ---\n{view}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until the main area's text contains `needle`.
    pub async fn wait_text(&self, needle: &str, limit: Duration) -> R<()> {
        let body = format!(
            "const m = document.querySelector('main'); return !!m && m.innerText.includes({});",
            serde_json::to_string(needle).unwrap_or_default()
        );
        self.wait(&format!("the text {needle:?}"), limit, &body)
            .await
            .map(|_| ())
    }

    /// The main area's visible text.
    pub async fn main_text(&self) -> R<String> {
        let v = self
            .js(
                "const m = document.querySelector('main'); return m ? m.innerText : '';",
                vec![],
            )
            .await?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    /// Saves a PNG of the window as `target/e2e-shots/<journey>-<nn>-<name>.png`.
    pub async fn shot(&mut self, name: &str) -> R<PathBuf> {
        // Let the view paint what it just received.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let png = self
            .c
            .screenshot()
            .await
            .map_err(|e| format!("screenshot {name}: {e}"))?;
        if png.len() < 8 || &png[1..4] != b"PNG" {
            return Err(format!("screenshot {name} is not a PNG"));
        }
        self.shot_no += 1;
        let dir = shots_dir();
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(format!("{}-{:02}-{name}.png", self.journey, self.shot_no));
        std::fs::write(&path, png).map_err(|e| format!("{}: {e}", path.display()))?;
        self.shots.push(path.clone());
        Ok(path)
    }

    /// Errors the page reported so far (console.error, uncaught errors, rejections).
    pub async fn console_errors(&self) -> R<Vec<String>> {
        let v = self
            .js(
                "return window.__e2e ? window.__e2e.errors : ['the error trap is not installed'];",
                vec![],
            )
            .await?;
        Ok(serde_json::from_value(v).unwrap_or_default())
    }

    /// Fails when the page reported any error.
    pub async fn assert_no_console_errors(&self, when: &str) -> R<()> {
        let errors = self.console_errors().await?;
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the page reported errors {when}:\n  {}",
                errors.join("\n  ")
            ))
        }
    }

    /// Scrolls the element the script `body` returns to the middle of the view (for a
    /// screenshot that shows it).
    pub async fn reveal(&self, body: &str) -> R<()> {
        let js = format!(
            "const el = (() => {{ {body} }})(); if (!el) return false; el.scrollIntoView({{block: 'center'}}); return true;"
        );
        self.wait("an element to scroll to", WAIT, &js)
            .await
            .map(|_| ())
    }

    /// Scrolls the main area back to its top.
    pub async fn scroll_top(&self) -> R<()> {
        self.js(
            "const m = document.querySelector('main'); if (m) m.scrollTop = 0; return true;",
            vec![],
        )
        .await
        .map(|_| ())
    }

    /// Checks that the checks can fail: a nameless button is reported, and a console.error is
    /// caught. Both probes are removed again.
    pub async fn self_test(&self) -> R<()> {
        let v = self
            .js(
                "const b = document.createElement('button'); b.id = 'e2e-probe'; document.body.appendChild(b); \
                 const found = window.__e2e.offenders().some((h) => h.includes('e2e-probe')); b.remove(); \
                 console.error('e2e probe'); const caught = window.__e2e.errors.includes('console.error: e2e probe'); \
                 window.__e2e.errors.length = 0; return found && caught;",
                vec![],
            )
            .await?;
        if v == true {
            Ok(())
        } else {
            Err("the accessible-name check or the console trap does not work".into())
        }
    }

    /// Fails when an interactive element has no accessible name.
    pub async fn assert_names(&self, view: &str) -> R<()> {
        let v = self.js("return window.__e2e.offenders();", vec![]).await?;
        let bad: Vec<String> = serde_json::from_value(v).unwrap_or_default();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{view}: {} interactive element(s) without an accessible name:\n  {}",
                bad.len(),
                bad.join("\n  ")
            ))
        }
    }

    /// Presses one key (a char or a [`Key`] code) with Control held.
    pub async fn ctrl(&self, k: char) -> R<()> {
        let seq = KeyActions::new("keyboard".into())
            .then(KeyAction::Down {
                value: Key::Control.into(),
            })
            .then(KeyAction::Down { value: k })
            .then(KeyAction::Up { value: k })
            .then(KeyAction::Up {
                value: Key::Control.into(),
            });
        self.c
            .perform_actions(seq)
            .await
            .map_err(|e| format!("Ctrl+{k}: {e}"))
    }

    /// Presses and releases one key.
    pub async fn press(&self, k: char) -> R<()> {
        let seq = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: k })
            .then(KeyAction::Up { value: k });
        self.c
            .perform_actions(seq)
            .await
            .map_err(|e| format!("key {:?}: {e}", k as u32))
    }

    /// Opens view `digit` (1..6) with Ctrl+digit and checks the sidebar and the page follow.
    pub async fn view(&self, digit: char, title: &str) -> R<()> {
        self.ctrl(digit).await?;
        let body = format!(
            "const a = document.querySelector('nav.sidebar button[aria-current=page]'); \
             const h = document.querySelector('main h1'); \
             return !!a && a.innerText.trim() === {t} && !!h && h.innerText.startsWith({h}) && document.activeElement === a;",
            t = serde_json::to_string(title).unwrap_or_default(),
            h = serde_json::to_string(title.split(' ').next().unwrap_or(title)).unwrap_or_default()
        );
        self.wait(
            &format!("Ctrl+{digit} to open {title} and focus its sidebar entry"),
            WAIT,
            &body,
        )
        .await
        .map(|_| ())
    }

    /// Marks the first visible element matching CSS `sel` whose accessible name or text is
    /// `label` (waiting for it), and returns it as a WebDriver element.
    pub async fn find(&self, sel: &str, label: &str) -> R<fantoccini::elements::Element> {
        let body = format!(
            "return window.__e2e.mark(window.__e2e.find({}, {}));",
            serde_json::to_string(sel).unwrap_or_default(),
            serde_json::to_string(label).unwrap_or_default()
        );
        self.wait(&format!("{sel} named {label:?}"), WAIT, &body)
            .await?;
        self.c
            .find(Locator::Css("[data-e2e='1']"))
            .await
            .map_err(|e| format!("{sel} named {label:?}: {e}"))
    }

    /// Marks the element the script `body` returns (waiting for it) and returns it.
    pub async fn find_by(&self, what: &str, body: &str) -> R<fantoccini::elements::Element> {
        let js = format!("return window.__e2e.mark((() => {{ {body} }})());");
        self.wait(what, WAIT, &js).await?;
        self.c
            .find(Locator::Css("[data-e2e='1']"))
            .await
            .map_err(|e| format!("{what}: {e}"))
    }

    /// Clicks the visible button named `label`.
    pub async fn click_button(&self, label: &str) -> R<()> {
        let el = self.find("button, [role=button]", label).await?;
        el.click()
            .await
            .map_err(|e| format!("clicking the button {label:?}: {e}"))
    }

    /// Replaces the text of the field `el` with `text`, as typed.
    pub async fn type_into(&self, el: &fantoccini::elements::Element, text: &str) -> R<()> {
        el.click()
            .await
            .map_err(|e| format!("focusing a field: {e}"))?;
        let select_all = format!("{}a{}", char::from(Key::Control), char::from(Key::Null));
        el.send_keys(&select_all)
            .await
            .map_err(|e| format!("selecting a field's text: {e}"))?;
        el.send_keys(&format!("{}", char::from(Key::Backspace)))
            .await
            .map_err(|e| format!("emptying a field: {e}"))?;
        el.send_keys(text)
            .await
            .map_err(|e| format!("typing {text:?}: {e}"))
    }

    /// The accessible names and texts of every button, link and menu item on the page now.
    pub async fn controls(&self) -> R<Vec<Control>> {
        let v = self.js("return window.__e2e.controls();", vec![]).await?;
        serde_json::from_value(v).map_err(|e| format!("controls: {e}"))
    }
}

/// A button, link or menu item as the page has it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Control {
    pub name: String,
    pub text: String,
    pub title: String,
    /// Inside a local `<dialog>` or `role=alertdialog` (its Cancel closes that dialog).
    pub local_dialog: bool,
}
