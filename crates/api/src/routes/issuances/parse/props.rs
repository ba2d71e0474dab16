//! Properties of the bulk-issuance parsers: the uploaded file ([`parse_upload`]) and the JSON
//! body ([`parse_json_users`]). Any bytes: no panic, every line accounted for under its
//! number, and what is kept bounded by the documented limits ([`MAX_LINES`] lines,
//! [`MAX_JSON_USERS`] ids, [`REPORTED`] invalid lines of at most 100 characters).
//!
//! These stand in for cargo-fuzz targets (issue 6, item 9): cargo-fuzz needs a nightly
//! toolchain, which CI does not have, so the parsers of outside input are driven by proptest
//! under plain `cargo test` instead.

use std::collections::HashSet;

use coupond_app::AppError;
use proptest::prelude::*;

use super::*;

/// One line of an upload, and what the parser should make of it.
#[derive(Clone, Debug)]
enum Line {
    /// A user id, written in any of the accepted ways.
    User(String, String),
    /// Text that is not a user id, as written.
    Invalid(String, String),
    /// Nothing in the first column.
    Blank(String),
}

fn user_id() -> impl Strategy<Value = String> {
    // No `_`: the id `user_id` on line 1 would be read as the header.
    prop_oneof!["u[0-9]", "[a-zA-Z0-9.:@-]{1,12}", "[a-z]{64}"]
}

fn not_a_user_id() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9]{1,8}[!#/?é ][a-z0-9]{1,8}",
        "[a-z]{65,150}",
        "[a-z]{1,3}[\\u{80}-\\u{10ffff}]{1,120}[a-z]{1,3}",
    ]
    .prop_filter("commas and line breaks end the first column", |t| {
        !t.contains([',', '\n', '\r'])
    })
}

fn line() -> impl Strategy<Value = Line> {
    let user = (user_id(), 0..6usize).prop_map(|(id, style)| {
        let written = match style {
            0 => id.clone(),
            1 => format!("  {id}\t"),
            2 => format!("\"{id}\""),
            3 => format!(" \"{id}\" ,Ann"),
            4 => format!("{id},Ann,\"Lee, Ann\""),
            _ => format!("\" {id} \","),
        };
        Line::User(id, written)
    });
    let invalid = (not_a_user_id(), any::<bool>()).prop_map(|(t, more)| {
        let written = if more { format!("{t},x") } else { t.clone() };
        Line::Invalid(t, written)
    });
    let blank = prop::sample::select(vec!["", " ", "\t", "\"\"", " \" \" ", ",Ann", "  ,x,y"])
        .prop_map(|b| Line::Blank(b.to_owned()));
    prop_oneof![4 => user, 2 => invalid, 1 => blank]
}

fn header() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::of(prop::sample::select(vec![
        "user_id",
        "USER_ID,name",
        "\"user_id\"",
        " User_Id ",
    ]))
}

/// The line ends of an upload: `\n` and `\r\n` mixed, or a lone `\r` (old Mac files)
/// throughout. (A lone `\r` before a `\n` would be one `\r\n`.)
fn line_ends() -> impl Strategy<Value = Vec<&'static str>> {
    prop_oneof![
        3 => prop::collection::vec(prop::sample::select(vec!["\n", "\r\n"]), 1..8),
        1 => Just(vec!["\r"]),
    ]
}

/// The upload's bytes: a byte-order mark maybe, then the lines, each ended by one of `ends`
/// in turn, the last one maybe not.
fn render(
    bom: bool,
    header: Option<&str>,
    lines: &[Line],
    ends: &[&str],
    final_newline: bool,
) -> Vec<u8> {
    let mut text = String::from(if bom { "\u{feff}" } else { "" });
    let written = header.into_iter().chain(lines.iter().map(|l| match l {
        Line::User(_, w) | Line::Invalid(_, w) | Line::Blank(w) => w.as_str(),
    }));
    for (i, w) in written.enumerate() {
        if i > 0 {
            text.push_str(ends[i % ends.len()]);
        }
        text.push_str(w);
    }
    if final_newline {
        text.push_str(ends[0]);
    }
    text.into_bytes()
}

/// What the parser should find in `lines`, numbered from `first`.
fn expected(lines: &[Line], first: u64) -> (Vec<String>, u64, u64, Vec<InvalidLine>) {
    let (mut users, mut duplicates, mut invalid, mut reported) = (Vec::new(), 0, 0, Vec::new());
    for (n, l) in (first..).zip(lines) {
        match l {
            Line::User(id, _) if users.contains(id) => duplicates += 1,
            Line::User(id, _) => users.push(id.clone()),
            Line::Invalid(text, _) => {
                invalid += 1;
                if reported.len() < REPORTED {
                    reported.push(InvalidLine {
                        line: n,
                        text: text.chars().take(100).collect(),
                    });
                }
            }
            Line::Blank(_) => {}
        }
    }
    (users, duplicates, invalid, reported)
}

fn found(p: &Parsed) -> (Vec<String>, u64, u64, Vec<InvalidLine>) {
    (
        p.users.iter().map(|u| u.as_str().to_owned()).collect(),
        p.duplicates,
        p.invalid,
        p.invalid_lines.clone(),
    )
}

fn is_invalid(r: &ApiResult<Parsed>, code: &str, field: &str) -> bool {
    matches!(r, Err(ApiError::App(AppError::Invalid { code: c, field: Some(f), .. })) if *c == code && f == field)
}

/// What holds of any successful parse of `text`: users distinct, every kept line accounted
/// for, at most [`REPORTED`] invalid lines kept, in order, each at most 100 characters of
/// the line it names.
fn check_bounds(text: &str, p: &Parsed) -> Result<(), TestCaseError> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let distinct: HashSet<&str> = p.users.iter().map(UserId::as_str).collect();
    prop_assert_eq!(distinct.len(), p.users.len());
    prop_assert!(p.users.len() as u64 + p.duplicates + p.invalid <= lines.len() as u64);
    prop_assert_eq!(p.invalid_lines.len() as u64, p.invalid.min(REPORTED as u64));
    prop_assert!(p.invalid_lines.windows(2).all(|w| w[0].line < w[1].line));
    for l in &p.invalid_lines {
        prop_assert!(l.text.chars().count() <= 100);
        let at = l.line.checked_sub(1).and_then(|i| lines.get(i as usize));
        prop_assert!(at.is_some_and(|at| at.contains(&l.text)), "{:?}", l);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn uploads_are_read_line_by_line(
        bom in any::<bool>(),
        header in header(),
        lines in prop::collection::vec(line(), 0..450),
        ends in line_ends(),
        final_newline in any::<bool>(),
    ) {
        let bytes = render(bom, header, &lines, &ends, final_newline);
        let p = parse_upload(&bytes).unwrap();
        prop_assert_eq!(found(&p), expected(&lines, 1 + u64::from(header.is_some())));
        check_bounds(std::str::from_utf8(&bytes).unwrap(), &p)?;
    }

    /// Past `max_lines` lines (blank ones aside) an upload is refused as a whole.
    #[test]
    fn uploads_stop_at_their_line_limit(
        lines in prop::collection::vec(line(), 0..40),
        max_lines in 0usize..40,
    ) {
        let bytes = render(false, None, &lines, &["\n"], true);
        let counted = lines.iter().filter(|l| !matches!(l, Line::Blank(_))).count();
        let r = parse_lines(&bytes, max_lines);
        match &r {
            Ok(p) => {
                prop_assert!(counted <= max_lines);
                prop_assert_eq!(p.users.len() as u64 + p.duplicates + p.invalid, counted as u64);
            }
            Err(_) => {
                prop_assert!(counted > max_lines);
                prop_assert!(is_invalid(&r, "too_many_lines", "body"), "{:?}", r);
            }
        }
    }

    /// However the upload arrives in pieces, it reads the same as in one.
    #[test]
    fn uploads_read_alike_in_any_pieces(
        lines in prop::collection::vec(line(), 0..60),
        cuts in prop::collection::vec(1usize..64, 1..20),
    ) {
        let bytes = render(true, Some("user_id"), &lines, &["\n", "\r\n", "\n", "\r"], true);
        let whole = found(&parse_upload(&bytes).unwrap());
        let mut p = LineParser::new(MAX_LINES);
        let mut rest: &[u8] = &bytes;
        for cut in cuts.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (piece, tail) = rest.split_at((*cut).min(rest.len()));
            p.feed(piece).unwrap();
            rest = tail;
        }
        prop_assert_eq!(found(&p.finish().unwrap()), whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..2000),
            any::<String>().prop_map(String::into_bytes),
            "[a-z0-9,\"\r\n \t_@.:-]{0,400}".prop_map(String::into_bytes),
            "([a-z]{1,3}[^\\n]{0,3}\\n){0,300}".prop_map(String::into_bytes),
        ]
    ) {
        let r = parse_upload(&bytes);
        match std::str::from_utf8(&bytes) {
            Err(_) => prop_assert!(is_invalid(&r, "invalid_upload", "body"), "{:?}", r),
            Ok(text) => check_bounds(text, r.as_ref().unwrap())?,
        }
    }

    #[test]
    fn json_bodies_are_read_id_by_id(
        ids in prop::collection::vec(prop_oneof![
            3 => user_id().prop_map(|id| Line::User(id.clone(), id)),
            1 => not_a_user_id().prop_map(|t| Line::Invalid(t.clone(), t)),
            1 => any::<String>().prop_filter_map("not an id", |t| {
                UserId::parse(&t).is_err().then(|| Line::Invalid(t.clone(), t))
            }),
        ], 0..120),
    ) {
        let written: Vec<&str> = ids.iter().map(|l| match l {
            Line::User(_, w) | Line::Invalid(_, w) | Line::Blank(w) => w.as_str(),
        }).collect();
        let body = serde_json::to_vec(&serde_json::json!({ "user_ids": written })).unwrap();
        let r = parse_json_users(&body);
        if ids.is_empty() {
            prop_assert!(is_invalid(&r, "invalid_value", "user_ids"), "{:?}", r);
        } else {
            prop_assert_eq!(found(&r.unwrap()), expected(&ids, 1));
        }
    }

    #[test]
    fn arbitrary_json_never_panics(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..500),
            any::<String>().prop_map(|s| format!(r#"{{"user_ids":[{s}]}}"#).into_bytes()),
            "\\{\"user_ids\":\\[(\"[a-z!]{0,4}\",?|[0-9]|null|\\[|\\]|\\{|\\}){0,40}\\]?\\}?"
                .prop_map(String::into_bytes),
        ]
    ) {
        if let Ok(p) = parse_json_users(&bytes) {
            let n = p.users.len() as u64 + p.duplicates + p.invalid;
            prop_assert!((1..=MAX_JSON_USERS as u64).contains(&n));
            prop_assert!(p.invalid_lines.iter().all(|l| (1..=n).contains(&l.line)));
        }
    }
}

/// [`parse_upload`] applies [`MAX_LINES`] (the property above checks `parse_lines` at every
/// limit; this one parse of a million lines is the slowest test here, so there is one).
#[test]
fn the_line_limit_is_the_documented_one() {
    let over = format!("{}\n{}", "u\n".repeat(MAX_LINES), "v\n".repeat(1000));
    let r = parse_upload(over.as_bytes());
    assert!(is_invalid(&r, "too_many_lines", "body"), "{r:?}");
}

#[test]
fn oversized_json_lists_are_refused_without_being_kept() {
    let ids = |n: usize| {
        let ids: Vec<String> = (0..n).map(|i| format!("u{i}")).collect();
        serde_json::to_vec(&serde_json::json!({ "user_ids": ids })).unwrap()
    };
    assert_eq!(
        parse_json_users(&ids(MAX_JSON_USERS)).unwrap().users.len(),
        MAX_JSON_USERS
    );
    let r = parse_json_users(&ids(MAX_JSON_USERS + 1));
    assert!(is_invalid(&r, "invalid_value", "user_ids"), "{r:?}");
    // A list far past the limit is read no further than one id past it.
    let big = ids(20 * MAX_JSON_USERS);
    let body: IssuanceBody = serde_json::from_slice(&big).unwrap();
    assert_eq!(body.user_ids.unwrap().len(), MAX_JSON_USERS + 1);
    let r = parse_json_users(&big);
    assert!(is_invalid(&r, "invalid_value", "user_ids"), "{r:?}");
    // What follows the limit is still checked to be JSON.
    let mut broken = ids(MAX_JSON_USERS + 5);
    broken.truncate(broken.len() - 3);
    let r = parse_json_users(&broken);
    assert!(
        matches!(
            r,
            Err(ApiError::BadRequest {
                code: "invalid_json",
                ..
            })
        ),
        "{r:?}"
    );
    // Not a list at all.
    let r = parse_json_users(br#"{"user_ids": "u1"}"#);
    assert!(is_invalid(&r, "invalid_field", "user_ids"), "{r:?}");
}
