#!/usr/bin/env python3
"""Writes scenarios/demo.jsonl, the built-in demo of `switchboard-phone` and `--demo`, from the
real corpora in ../shared/corpus (LumiRealm's describe manifest and spindle.json permissions,
LumiAgent's spindle.json, the host's permission error texts, OpenPhone's ifp/1 tool list).

Run from the repository root: python3 scripts/gen-demo-scenario.py
The scenario format and its placeholders are documented in docs/protocol.md, "Scenarios".
tests/demo_scenario.rs checks that the file still matches the corpora.
"""
import hashlib
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")


def load(*p):
    with open(os.path.join(CORPUS, *p), encoding="utf-8") as f:
        return json.load(f)


describe = load("lumiverse", "lumirealm.describe.json")
realm_spindle = load("lumiverse", "lumirealm.spindle.json")
agent_spindle = load("lumiverse", "lumiagent.spindle.json")
host_errors = load("lumiverse", "host-errors.json")["cases"]
tools = {t["tool"]: t for t in load("ifp1", "openphone-tools.ifp1.json")["tools"]}


def error_text(endpoint, form, missing):
    for c in host_errors:
        e = c["expect"]
        if (e.get("kind") == "permission" and e.get("form") == form and e.get("endpoint") == endpoint
                and e.get("missing_extension") == missing and not e.get("wrapped_by")):
            return c["input"]
    raise SystemExit(f"no host error {endpoint} {form} {missing}")


def js_hash(v):
    text = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def lumiagent_manifest_hash(m, identifier, name):
    """manifestHash as LumiAgent stores it (upstream-behaviour.md): of the normalised answer with
    extension.id and extension.name set to the registry's. Enough of the normalisation for a
    well-formed answer such as the corpus one (scripts/gen-normalised-manifest-hashes.mjs has
    all of it)."""
    ext = {"id": identifier, "name": name}
    if isinstance(m["extension"].get("version"), str):
        ext["version"] = m["extension"]["version"]
    out = {"extension": ext, "surfaces": [
        {"id": s["id"], "label": s["label"],
         "description": s["description"] if isinstance(s.get("description"), str) else "",
         "scope": s["scope"]["kind"] if isinstance(s["scope"], dict) else s["scope"]}
        for s in m["surfaces"]]}
    if isinstance(m.get("excludeFromSearch"), list):
        out["excludeFromSearch"] = [x for x in m["excludeFromSearch"] if isinstance(x, str)]
    return js_hash(out)


PERMISSION_ERROR = error_text("lumirealm.phoneline", "inherit", "lumiagent")
PROBE_ERROR = error_text("lumiagent.phoneline_probe", "inherit", "lumirealm")
for t in ("messages.send", "calendar.add"):
    assert t in tools, t
assert tools["messages.send"]["risk"] == "high"

weather_manifest = {
    "extension": {"id": "lumiweather", "name": "Weather Lines", "version": "0.2.0"},
    "excludeFromSearch": ["lumiweather.cache"],
    "surfaces": [{"id": "forecast", "label": "Forecasts", "scope": "global",
                  "description": "Saved forecasts per place."}],
}

lines = []


def line(at_ms, msg):
    lines.append({"at_ms": at_ms, "msg": msg})


MIRROR = "{{id:ses:mirror}}"
RUNTIME = "{{id:ses:runtime}}"
CHAT = "{{id:ses:chat}}"


def settings(at_ms, weather_described, realm_described_at):
    lns = [
        {"identifier": "lumiagent", "name": agent_spindle["name"], "permissions": agent_spindle["permissions"]},
        {"identifier": "lumirealm", "name": realm_spindle["name"], "permissions": realm_spindle["permissions"],
         "describe": {"at": realm_described_at, "status": "answered", "manifest": describe}},
        {"identifier": "lumiweather", "name": "LumiWeather", "permissions": ["characters"]},
    ]
    if weather_described:
        lns[2]["describe"] = {"at": weather_described, "status": "answered", "manifest": weather_manifest}
    line(at_ms, {"type": "event.phoneline.settings", "session": MIRROR, "payload": {
        "registry": {"version": 1, "phoneLines": [
            {"identifier": "lumirealm", "name": "LumiRealm"},
            {"identifier": "lumiweather", "name": "LumiWeather"}]},
        "pairings": {"version": 1, "pairings": {"lumirealm": {
            "identifier": "lumirealm", "displayName": "LumiRealm", "allowed": True,
            "manifestHash": lumiagent_manifest_hash(describe, "lumirealm", "LumiRealm"), "decidedAt": "{{ms-86400000}}"}}},
        "lines": lns}})


def dial(at_ms, name, op, request, duration_ms, outcome, response=None, error=None,
         callee="lumirealm", retention=None):
    p = {"dedup": "{{id:dial:%s}}" % name, "call_id": "{{id:call:%s}}" % name, "caller": "lumiagent",
         "callee": callee, "endpoint": f"{callee}.phoneline", "op": op, "request": request,
         "started_at": "{{ts}}", "duration_ms": duration_ms, "outcome": outcome}
    if response is not None:
        p["response"] = response
    if error is not None:
        p["error"] = error
    msg = {"type": "event.phoneline.dial", "session": MIRROR, "payload": p}
    if retention:
        msg["labels"] = {"consent": "product_operation", "retention": retention}
    line(at_ms, msg)


def propose(at_ms, name, tool, params, risk, reason, session=RUNTIME, expires_in_ms=60000):
    line(at_ms, {"type": "action.propose", "session": session, "correlation": "{{id:cor:%s}}" % name,
                 "payload": {"action_id": "{{id:act:%s}}" % name, "tool": tool, "params": params,
                             "params_hash": "{{params_hash}}", "risk": risk,
                             "idempotency_key": "{{id:idem:%s}}" % name,
                             "expires_at": "{{ts+%d}}" % expires_in_ms, "reason": reason}})


def approve(at_ms, name, session=RUNTIME, params_hash="{{params_hash}}", mode="user_confirmed"):
    line(at_ms, {"type": "action.approve", "session": session, "generation": 1,
                 "correlation": "{{id:cor:%s}}" % name,
                 "payload": {"action_id": "{{id:act:%s}}" % name, "params_hash": params_hash,
                             "confirmation": {"mode": mode, "ref": "{{id:conf:%s}}" % name}}})


def reject(at_ms, name, reason_class, session=RUNTIME):
    line(at_ms, {"type": "action.reject", "session": session, "correlation": "{{id:cor:%s}}" % name,
                 "payload": {"action_id": "{{id:act:%s}}" % name, "reason_class": reason_class}})


def result(at_ms, name, status, session=RUNTIME, message=None, error_class=None):
    p = {"action_id": "{{id:act:%s}}" % name, "status": status}
    if error_class:
        p["error_class"] = error_class
    if message:
        p["message"] = message
    line(at_ms, {"type": "action.result", "session": session, "generation": 1,
                 "correlation": "{{id:cor:%s}}" % name, "payload": p})


def cancel(at_ms, name, session=RUNTIME):
    line(at_ms, {"type": "action.cancel", "session": session, "correlation": "{{id:cor:%s}}" % name,
                 "payload": {"action_id": "{{id:act:%s}}" % name}})


# --- phone-line settings and autonomy --------------------------------------------------------
settings(0, None, "{{ts-60000}}")
line(300, {"type": "event.runtime.autonomy", "session": RUNTIME, "payload": {"autonomy": "ask_before_action"}})
line(400, {"type": "event.runtime.autonomy", "session": CHAT, "payload": {"autonomy": "ask_before_action"}})

# --- LumiAgent dials LumiRealm ------------------------------------------------------------
# Requests and responses follow phone-line.md, "Request and response shapes" (each request
# carries the dial's callId), except the three dials marked NOT TO SPEC, there on purpose so the
# Live dials view shows its spec marks on first launch.
surface = describe["surfaces"][0]["id"]
USER = "user_demo"


def req(name, op, **fields):
    return {"op": op, "userId": USER, **fields, "callId": "{{id:call:%s}}" % name}


dial(1000, "describe", "describe", {"op": "describe", "callId": "{{id:call:describe}}"}, 42, "ok", response=describe)
dial(2000, "list", "list_items", req("list", "list_items", surfaceId=surface, characterId="char_aria"), 118, "ok",
     response={"items": [{"id": "mod_aria_core", "label": "Aria core module"},
                         {"id": "mod_aria_lore", "label": "Aria lore module", "brief": "12 lorebook entries"}],
               "total": 2})
dial(3000, "read", "read_item", req("read", "read_item", surfaceId=surface, itemId="mod_aria_core"),
     1340, "ok", response={"value": {"id": "mod_aria_core", "label": "Aria core module",
                                      "data": {"name": "Aria core", "triggers": 3}}}, retention="extended")
dial(4000, "grep", "grep_items",
     req("grep", "grep_items", surfaceId=surface, pattern="lantern", characterId="char_aria", ignoreCase=True),
     260, "ok", response={"hits": [{"itemId": "mod_aria_lore", "itemLabel": "Aria lore module",
                                     "fieldPath": "lorebook.entries[4].content", "line": 1, "match": "lantern",
                                     "preview": "the lantern at the harbour"}], "truncated": False})
# The dial fails with the host's permission error: a banner is raised.
dial(5000, "read_denied", "read_item", req("read_denied", "read_item", surfaceId=surface, itemId="mod_aria_lore"),
     9, "error", error=PERMISSION_ERROR)
# LumiRealm's probe read of LumiAgent fails outside a dial; a permission change later fixes it.
line(6000, {"type": "event.bridge.status", "session": MIRROR, "payload": {
    "source": "probe", "caller": "lumirealm", "endpoint": "lumiagent.phoneline_probe",
    "outcome": "error", "error": PROBE_ERROR}})
# A second extension whose describe name does not match the registry.
dial(7000, "weather_describe", "describe", {"op": "describe", "callId": "{{id:call:weather_describe}}"}, 35, "ok",
     response=weather_manifest, callee="lumiweather")
settings(8000, "{{ts-1000}}", "{{ts-7000}}")
line(9000, {"type": "event.bridge.status", "session": MIRROR, "payload": {
    "source": "permission_change", "caller": "lumirealm", "endpoint": "lumiagent.phoneline_probe",
    "outcome": "ok"}})
# The person granted push_notification: the same dial now works and the banner clears.
dial(10000, "read_again", "read_item", req("read_again", "read_item", surfaceId=surface, itemId="mod_aria_lore"),
     140, "ok", response={"value": {"id": "mod_aria_lore", "label": "Aria lore module", "data": {"entries": 12}},
                          "meta": {"updatedAt": "{{ts-3600000}}"}})
dial(10500, "unknown_surface", "list_items",
     req("unknown_surface", "list_items", surfaceId="module_envelope_v2"), 7,
     "tool_error", error="unknown surface: module_envelope_v2")
# LumiRealm's own extension op (phone-line.md, "Operations"): not a core op, and not an error.
dial(10600, "attach", "attach_module", req("attach", "attach_module", characterId="char_aria", moduleId="mod_aria_lore"),
     55, "ok", response={"ok": True})
# NOT TO SPEC (1): the old shapes: `surface` and `id` for surfaceId/itemId, no userId, and the
# answer under `item` instead of `value`.
dial(10700, "read_old_shape", "read_item",
     {"op": "read_item", "surface": surface, "id": "mod_aria_core", "callId": "{{id:call:read_old_shape}}"},
     31, "ok", response={"item": {"id": "mod_aria_core", "label": "Aria core module"}})
# NOT TO SPEC (2): grep hits without itemId/fieldPath/match and no `truncated`.
dial(10800, "grep_old_shape", "grep_items",
     req("grep_old_shape", "grep_items", surfaceId=surface, pattern="harbour", characterId="char_aria"),
     88, "ok", response={"hits": [{"id": "mod_aria_lore", "path": "lorebook.entries[4].content",
                                    "line": 1, "preview": "the lantern at the harbour"}]})
# NOT TO SPEC (3): list_items without `total`, and without the characterId that LumiRealm's
# per_character surface needs.
dial(10900, "list_no_total", "list_items", req("list_no_total", "list_items", surfaceId=surface), 64, "ok",
     response={"items": [{"id": "mod_aria_core", "label": "Aria core module"}]})

# --- OpenPhone proposals (ifp/1 tool list) ----------------------------------------------------
sms = {"to": "+1 555 0100", "body": "Running 10 minutes late, see you at 7.", "reason": "The user asked to tell Sam they are late."}
propose(11000, "sms", "messages.send", sms, tools["messages.send"]["risk"], "Tell Sam you are running late")
approve(12000, "sms")
result(12500, "sms", "executed")
cal = {"title": "Dentist", "start_at": "{{ms+86400000}}", "duration_minutes": 30, "reason": "The user asked to book the dentist."}
propose(13000, "cal", "calendar.add", cal, tools["calendar.add"]["risk"], "Add the dentist appointment")
reject(14000, "cal", "user_denied")
sms2 = {"to": "+1 555 0101", "body": "Happy birthday!", "reason": "The user asked to send wishes."}
propose(15000, "sms_late", "messages.send", sms2, tools["messages.send"]["risk"], "Send birthday wishes",
        expires_in_ms=5000)
cal2 = {"title": "Team lunch", "start_at": "{{ms+172800000}}", "duration_minutes": 60, "reason": "Lunch with the team."}
propose(16000, "cal_bound", "calendar.add", cal2, tools["calendar.add"]["risk"], "Add team lunch")
# The approval names other parameters than proposed: binding mismatch; the runtime then cancels.
approve(17000, "cal_bound", params_hash="sha256:" + hashlib.sha256(b"other params").hexdigest())
cancel(18000, "cal_bound")
line(19000, {"type": "event.runtime.autonomy", "session": RUNTIME, "payload": {"autonomy": "trusted_actions"}})
# Approved after expires_at (15000 + 5000): expired.
approve(21000, "sms_late")

# --- phone_action proposals (phone-actions.md) ---------------------------------------------------
propose(22000, "alarm", "phone_action",
        {"action": "alarm", "summary": "Alarm at 07:30 on weekdays", "time": "07:30",
         "days": ["mon", "tue", "wed", "thu", "fri"]}, "high", "Wake-up alarm", session=CHAT, expires_in_ms=120000)
approve(23000, "alarm", session=CHAT)
result(23500, "alarm", "executed", session=CHAT, message="Alarm set for 07:30, Monday to Friday.")
propose(24000, "navigate", "phone_action",
        {"action": "navigate", "summary": "Drive to the harbour", "destination": {"query": "Harbour car park"},
         "mode": "drive"}, "high", "Start the route", session=CHAT, expires_in_ms=120000)
reject(25000, "navigate", "user_denied", session=CHAT)
propose(26000, "add_stop", "phone_action",
        {"action": "add_stop", "summary": "Stop for fuel on the way", "stop": {"query": "fuel station"},
         "destination": {"query": "Harbour car park"}}, "high", "Add a fuel stop", session=CHAT, expires_in_ms=120000)
approve(27000, "add_stop", session=CHAT)
result(28000, "add_stop", "failed", session=CHAT, error_class="capability_missing",
       message="No map app on this phone can plan a route through a stop.")
propose(29000, "sms_draft", "phone_action",
        {"action": "sms_draft", "summary": "Draft a text to Sam", "to": ["+1 555 0100"],
         "body": "On my way."}, "high", "Draft a message", session=CHAT, expires_in_ms=120000)
# No answer within phone.wait_seconds (120 s): the card goes away.
reject(149000, "sms_draft", "expired", session=CHAT)
dial(150000, "describe_late", "describe", {"op": "describe", "callId": "{{id:call:describe_late}}"}, 40, "ok",
     response=describe)

header = ("# switchboard-phone demo scenario, generated by scripts/gen-demo-scenario.py from ../shared/corpus.\n"
          "# One JSON object per line: {\"at_ms\": <ms from start>, \"msg\": <ifp/1 message with placeholders>}.\n")
with open(os.path.join(ROOT, "scenarios", "demo.jsonl"), "w", encoding="utf-8") as f:
    f.write(header)
    for l in lines:
        f.write(json.dumps(l, ensure_ascii=False, separators=(",", ":")) + "\n")
print(f"wrote {len(lines)} lines")
