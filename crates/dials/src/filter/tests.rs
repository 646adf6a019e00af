//! The filter language's tests: the module docs' example, each kind of term, errors with their
//! positions, and the property that printing then parsing gives the query back.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::compiled::text_has_phrase;
use super::parse::OUTCOMES;
use super::*;
use crate::record::DialOutcome;
use proptest::prelude::*;

fn p(s: &str) -> DialQuery {
    DialQuery::parse(s).unwrap()
}

fn e(s: &str) -> FilterError {
    DialQuery::parse(s).unwrap_err()
}

#[test]
fn the_module_docs_example_parses_to_its_terms() {
    let q = p(
        r#"op:read_item caller:lumiagent -outcome:ok duration>1s phone:"Demo phone" spec:broken word"#,
    );
    assert_eq!(
        q.terms,
        vec![
            Term {
                negated: false,
                atom: Atom::Field(TextField::Op, "read_item".into())
            },
            Term {
                negated: false,
                atom: Atom::Field(TextField::Caller, "lumiagent".into())
            },
            Term {
                negated: true,
                atom: Atom::Outcome(DialOutcome::Ok)
            },
            Term {
                negated: false,
                atom: Atom::Duration(Cmp::Gt, 1000)
            },
            Term {
                negated: false,
                atom: Atom::Field(TextField::Phone, "Demo phone".into())
            },
            Term {
                negated: false,
                atom: Atom::Spec(SpecWant::Broken)
            },
            Term {
                negated: false,
                atom: Atom::Text("word".into())
            },
        ]
    );
    assert_eq!(
        q.to_string(),
        r#"op:read_item caller:lumiagent -outcome:ok duration>1s phone:"Demo phone" spec:broken word"#
    );
}

#[test]
fn durations_times_and_regexes() {
    assert_eq!(
        p("duration>=1.5s").terms[0].atom,
        Atom::Duration(Cmp::Ge, 1500)
    );
    assert_eq!(
        p("duration<250ms").terms[0].atom,
        Atom::Duration(Cmp::Lt, 250)
    );
    assert_eq!(p("duration=0ms").to_string(), "duration=0ms");
    assert_eq!(p("duration>2000ms").to_string(), "duration>2s");
    assert_eq!(
        p("after:-1h").terms[0].atom,
        Atom::After(TimeSpec::Ago(3_600_000))
    );
    assert_eq!(p("after:-90m").to_string(), "after:-90m");
    assert_eq!(p("after:-120m").to_string(), "after:-2h");
    assert_eq!(
        p("before:2026-12-01T10:00:00Z").terms[0].atom,
        Atom::Before(TimeSpec::At(1_796_119_200_000))
    );
    assert_eq!(
        p("before:2026-12-01T11:00:00.250+01:00").to_string(),
        "before:2026-12-01T10:00:00.250Z"
    );
    assert_eq!(
        p("after:2026-12-01").to_string(),
        "after:2026-12-01T00:00:00Z"
    );
    assert_eq!(
        p(r"/read_\w+\/x/i").terms[0].atom,
        Atom::Regex {
            pattern: r"read_\w+/x".into(),
            ignore_case: true
        }
    );
    assert_eq!(p(r"/a\/b/").to_string(), r"/a\/b/");
}

#[test]
fn errors_name_the_position_and_what_was_expected() {
    let x = e("op:read_item colour:red");
    assert_eq!((x.start, x.end, x.column), (13, 19, 14));
    assert!(
        x.message.contains("unknown field `colour`"),
        "{}",
        x.message
    );
    assert!(x.expected.contains(&"outcome".to_owned()));
    let x = e("outcome:fine");
    assert_eq!((x.start, x.end), (8, 12));
    assert_eq!(x.expected, OUTCOMES.map(String::from).to_vec());
    let x = e("duration>1");
    assert!(x.message.contains("needs a unit"), "{}", x.message);
    assert_eq!(x.start, 9);
    let x = e("duration>1.0001s");
    assert!(
        x.message.contains("finer than a millisecond"),
        "{}",
        x.message
    );
    let x = e(r#"phone:"Demo phone"#);
    assert!(x.message.contains("never closed"), "{}", x.message);
    assert_eq!((x.start, x.end), (6, 17));
    let x = e("after:yesterday");
    assert!(x.message.contains("not a time"), "{}", x.message);
    let x = e("after:-1w");
    assert!(x.message.contains("relative time"), "{}", x.message);
    let x = e("op: read_item");
    assert!(x.message.contains("right after the colon"), "{}", x.message);
    let x = e("- op:x");
    assert_eq!(x.start, 0);
    let x = e("/(unclosed/");
    assert!(x.message.contains("not a valid regex"), "{}", x.message);
    // The regex's own error points where in the pattern it is (the helper's `/item_(/`
    // was put at column 1).
    let x = e("op:x /item_(/");
    assert!(x.message.contains("unclosed group"), "{}", x.message);
    assert_eq!((x.start, x.end, x.column), (11, 12, 12), "{x:?}");
    let x = e(r"/a\/b{2,1}/");
    assert!(x.message.contains("invalid repetition"), "{}", x.message);
    assert_eq!(
        &r"/a\/b{2,1}/"[x.byte_start as usize..x.byte_end as usize],
        "{2,1}"
    );
    // Two comparisons: said as such, not as a missing unit.
    let x = e("duration>>1s");
    assert!(x.message.contains("one comparison only"), "{}", x.message);
    assert_eq!((x.start, x.end), (8, 10));
    let x = e("duration>=<1s");
    assert!(x.message.contains("one comparison only"), "{}", x.message);
    let x = e("/abc");
    assert!(x.message.contains("never closed"), "{}", x.message);
    let x = e("wo\"rd");
    assert!(x.message.contains("a quote inside"), "{}", x.message);
    let x = e("{}");
    assert!(x.message.contains("letter or digit"), "{}", x.message);
    let x = e("time>-1h");
    assert!(x.message.contains("after:"), "{}", x.message);
    // Positions count UTF-16 units for the window, bytes and characters for the rest.
    let x = e("é😀 colour:x");
    assert_eq!((x.start, x.column, x.byte_start), (4, 4, 7));
    assert_eq!(FilterCheck::of("colour:x").error.unwrap().start, 0);
    assert_eq!(
        FilterCheck::of("  op:x   word ").canonical.unwrap(),
        "op:x word"
    );
}

#[test]
fn free_text_quoting_keeps_words_apart_from_fields() {
    assert_eq!(p(r#""op:x""#).terms[0].atom, Atom::Text("op:x".into()));
    assert_eq!(p(r#""op:x""#).to_string(), r#""op:x""#);
    assert_eq!(p(r#""-x""#).to_string(), r#""-x""#);
    assert_eq!(p(r#"-"a b""#).to_string(), r#"-"a b""#);
    assert_eq!(
        p(r#"call:"say \"hi\"""#).terms[0].atom,
        Atom::Field(TextField::Call, r#"say "hi""#.into())
    );
    assert_eq!(p("lumirealm.phoneline").to_string(), "lumirealm.phoneline");
}

#[test]
fn connections_are_admitted_only_by_phone_time_and_kind_terms() {
    assert!(p("").admits_connections());
    assert!(p("phone:dev_a after:-1h kind:connection").admits_connections());
    assert!(!p("phone:dev_a -kind:connection").admits_connections());
    assert!(!p("-outcome:ok").admits_connections());
    assert!(!p("word").admits_connections());
    assert!(!p("kind:dial").admits_connections());
    assert!(!p("kind:connection").admits_dials());
    assert!(p("-kind:connection").admits_dials());
}

#[test]
fn words_and_phrases() {
    let t = r#"{"op":"read_item","itemId":"ITEM_004242","q":"Hello, World"}"#;
    let w = |s: &str| words(s).collect::<Vec<_>>();
    assert!(text_has_phrase(t, &w("item_0042")));
    assert!(text_has_phrase(t, &w("hello world")));
    assert!(text_has_phrase(t, &w("hello wor")));
    assert!(!text_has_phrase(t, &w("hel world")));
    assert!(!text_has_phrase(t, &w("tem_004242")));
    assert!(text_has_phrase(t, &w("itemid")));
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{1,8}",
        "[a-zA-Z0-9 \"\\\\:/é-]{0,10}",
        Just("Demo phone".to_owned()),
        Just("-x".to_owned()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9_]{1,8}", "[a-zA-Z0-9 \"\\\\:/é<>=-]{0,10}"]
        .prop_filter("has a word", |s| words(s).next().is_some())
}

fn atom() -> impl Strategy<Value = Atom> {
    let field = (0usize..7, value()).prop_map(|(i, v)| Atom::Field(TextField::ALL[i], v));
    let cmp = prop_oneof![
        Just(Cmp::Gt),
        Just(Cmp::Ge),
        Just(Cmp::Lt),
        Just(Cmp::Le),
        Just(Cmp::Eq)
    ];
    let time = prop_oneof![
        (1i64..100_000).prop_map(|s| TimeSpec::Ago(s * 1000)),
        (0i64..4_000_000_000_000).prop_map(TimeSpec::At),
    ];
    prop_oneof![
        field,
        (0usize..4).prop_map(|i| Atom::Outcome(DialOutcome::ALL[i])),
        prop_oneof![Just(SpecWant::Ok), Just(SpecWant::Broken)].prop_map(Atom::Spec),
        prop_oneof![Just(RowKind::Dial), Just(RowKind::Connection)].prop_map(Atom::Kind),
        (cmp, 0u64..10_000_000).prop_map(|(c, ms)| Atom::Duration(c, ms)),
        time.clone().prop_map(Atom::After),
        time.prop_map(Atom::Before),
        text().prop_map(Atom::Text),
        ("[a-z/.]{1,6}", any::<bool>()).prop_map(|(pattern, ignore_case)| Atom::Regex {
            pattern,
            ignore_case
        }),
    ]
}

proptest! {
    #[test]
    fn printing_then_parsing_gives_the_filter_back(
        terms in proptest::collection::vec((any::<bool>(), atom()), 0..6)
    ) {
        let q = DialQuery {
            terms: terms.into_iter().map(|(negated, atom)| Term { negated, atom }).collect(),
        };
        let line = q.to_string();
        let back = DialQuery::parse(&line);
        prop_assert_eq!(back.as_ref().ok(), Some(&q), "line {:?} -> {:?}", line, back);
    }

    #[test]
    fn parsing_never_panics(line in "\\PC{0,40}") {
        let _ = DialQuery::parse(&line);
    }
}
