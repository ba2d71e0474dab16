//! Reading who to issue to: a JSON body of user ids, or an uploaded file read as it streams
//! in ([`LineParser`]), so an upload's bytes are never held whole.

use std::hash::{BuildHasher, RandomState};

use coupond_app::records::InvalidLine;
use coupond_domain::csv::LineSplitter;
use coupond_domain::{Segment, UserId};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult};
use crate::extract::parse_json;

/// Most users in a JSON body (answered when done).
pub const MAX_JSON_USERS: usize = 10_000;
/// The largest JSON body: 10,000 ids of the longest form (64 characters) fit.
pub const MAX_JSON_BYTES: usize = 1024 * 1024;
/// Most lines in an uploaded file (as many as a job may name).
pub const MAX_LINES: usize = coupond_app::issuance::MAX_USERS;
/// Invalid lines reported by number.
pub(super) const REPORTED: usize = 100;
/// Bytes of a line kept for reading it: a user id is at most 64 characters, so a longer
/// line is judged by its start.
const MAX_LINE_BYTES: usize = 4096;

/// A JSON issuance: the users (answered once all are handled), or a segment (answered at once
/// with the job, issued in the background). Exactly one of the two.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssuanceBody {
    /// 1 to 10,000 user ids.
    #[schema(value_type = Option<Vec<String>>)]
    #[serde(default, deserialize_with = "some_json_users")]
    pub user_ids: Option<Vec<String>>,
    /// Every user holding any of these tags (1 to 20), at most 1,000,000 users; with
    /// `active_within_days` (1 to 3650), only those seen within that many days.
    pub segment: Option<Segment>,
}

/// What a JSON issuance asks for.
#[derive(Debug)]
pub enum JsonAsk {
    Users(Parsed),
    Segment(Segment),
}

fn some_json_users<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<String>>, D::Error> {
    at_most_json_users(d).map(Some)
}

/// Reads the first `MAX_JSON_USERS + 1` ids and skips the rest unread, so that an oversized
/// list is refused without being held in memory first.
fn at_most_json_users<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct Ids;
    impl<'de> serde::de::Visitor<'de> for Ids {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a sequence of user ids")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut ids = Vec::new();
            while ids.len() <= MAX_JSON_USERS {
                match seq.next_element()? {
                    Some(id) => ids.push(id),
                    None => return Ok(ids),
                }
            }
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(ids)
        }
    }
    d.deserialize_seq(Ids)
}

/// Users parsed from a request: valid and distinct, in order, and what was left out.
#[derive(Debug, Default)]
pub struct Parsed {
    pub users: Vec<UserId>,
    pub duplicates: u64,
    pub invalid: u64,
    pub invalid_lines: Vec<InvalidLine>,
    /// Positions in `users`, by the hash of the id: each id is kept once (in `users`), not
    /// twice as a set of strings would.
    seen: hashbrown::HashTable<u32>,
    hasher: RandomState,
}

impl Parsed {
    /// The users a job issues to.
    pub fn into_recipients(self) -> coupond_app::issuance::Recipients {
        coupond_app::issuance::Recipients {
            users: self.users,
            duplicates: self.duplicates,
            invalid: self.invalid,
            invalid_lines: self.invalid_lines,
        }
    }

    /// Whether `u` is new (and now kept).
    fn keep(&mut self, u: UserId) -> bool {
        let hash = self.hasher.hash_one(u.as_str());
        let users = &self.users;
        if self.seen.find(hash, |&i| users[i as usize] == u).is_some() {
            return false;
        }
        let Ok(at) = u32::try_from(self.users.len()) else {
            return false;
        };
        let hasher = &self.hasher;
        self.seen
            .insert_unique(hash, at, |&i| hasher.hash_one(users[i as usize].as_str()));
        self.users.push(u);
        true
    }

    fn take(&mut self, line: u64, text: &str) {
        match UserId::parse(text) {
            Ok(u) => {
                if !self.keep(u) {
                    self.duplicates += 1;
                }
            }
            Err(_) => {
                self.invalid += 1;
                if self.invalid_lines.len() < REPORTED {
                    self.invalid_lines.push(InvalidLine {
                        line,
                        text: text.chars().take(100).collect(),
                    });
                }
            }
        }
    }
}

/// A JSON issuance body: 1 to [`MAX_JSON_USERS`] ids.
pub fn parse_json_ask(bytes: &[u8]) -> ApiResult<JsonAsk> {
    let b: IssuanceBody = parse_json(bytes)?;
    let ids = match (b.user_ids, b.segment) {
        (Some(ids), None) => ids,
        (None, Some(segment)) => return Ok(JsonAsk::Segment(segment.validate()?)),
        _ => {
            return Err(ApiError::invalid(
                "invalid_value",
                "user_ids",
                "give user_ids or a segment, not both",
            ))
        }
    };
    if ids.is_empty() || ids.len() > MAX_JSON_USERS {
        return Err(ApiError::invalid(
            "invalid_value",
            "user_ids",
            format!("1 to {MAX_JSON_USERS} user ids; upload a file for more"),
        ));
    }
    let mut parsed = Parsed::default();
    for (i, u) in ids.iter().enumerate() {
        parsed.take(i as u64 + 1, u);
    }
    Ok(JsonAsk::Users(parsed))
}

/// A JSON body that must list users (not a segment).
#[cfg(test)]
pub fn parse_json_users(bytes: &[u8]) -> ApiResult<Parsed> {
    match parse_json_ask(bytes)? {
        JsonAsk::Users(p) => Ok(p),
        JsonAsk::Segment(_) => Err(ApiError::invalid(
            "invalid_value",
            "segment",
            "a segment is not a list of users",
        )),
    }
}

/// An upload read as it arrives: one user id per line, or CSV whose first column is the user
/// id (an optional `user_id` header, optional double quotes). Lines are cut by
/// [`LineSplitter`] (a byte-order mark dropped; `\r\n`, `\n` and a lone `\r` end a line).
/// Blank lines are skipped; line numbers count them. At most `max_lines` lines that are not
/// blank: reading stops at the next one. Only the current line is buffered (its first
/// [`MAX_LINE_BYTES`] bytes).
#[derive(Debug)]
pub struct LineParser {
    lines: LineSplitter,
    users: UserLines,
}

/// The users of the lines read so far.
#[derive(Debug)]
struct UserLines {
    max_lines: usize,
    /// Lines with something in the first column so far.
    counted: usize,
    parsed: Parsed,
}

impl LineParser {
    pub fn new(max_lines: usize) -> Self {
        LineParser {
            lines: LineSplitter::new(MAX_LINE_BYTES),
            users: UserLines {
                max_lines,
                counted: 0,
                parsed: Parsed::default(),
            },
        }
    }

    /// Reads the next bytes of the upload.
    pub fn feed(&mut self, bytes: &[u8]) -> ApiResult<()> {
        self.lines.feed(bytes, |n, line| self.users.line(n, line))
    }

    /// The upload is complete: the users found.
    pub fn finish(self) -> ApiResult<Parsed> {
        let LineParser { lines, mut users } = self;
        lines.finish(|n, line| users.line(n, line))?;
        Ok(users.parsed)
    }
}

impl UserLines {
    fn line(&mut self, line_no: u64, line: &[u8]) -> ApiResult<()> {
        let text = match std::str::from_utf8(line) {
            Ok(t) => t,
            // Cut inside a character by the length bound: judge the line by what came before.
            Err(e) if line.len() == MAX_LINE_BYTES && e.error_len().is_none() => {
                std::str::from_utf8(&line[..e.valid_up_to()]).unwrap_or_default()
            }
            Err(_) => {
                return Err(ApiError::invalid(
                    "invalid_upload",
                    "body",
                    "the upload is not UTF-8 text",
                ))
            }
        };
        let first = text
            .split(',')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"')
            .trim();
        if first.is_empty() || (line_no == 1 && first.eq_ignore_ascii_case("user_id")) {
            return Ok(());
        }
        self.counted += 1;
        if self.counted > self.max_lines {
            return Err(ApiError::invalid(
                "too_many_lines",
                "body",
                format!("at most {} users per upload", self.max_lines),
            ));
        }
        self.parsed.take(line_no, first);
        Ok(())
    }
}

/// A whole upload at once (see [`LineParser`]).
#[cfg(test)]
pub fn parse_upload(bytes: &[u8]) -> ApiResult<Parsed> {
    parse_lines(bytes, MAX_LINES)
}

/// [`parse_upload`] with `max_lines` for [`MAX_LINES`].
#[cfg(test)]
pub fn parse_lines(bytes: &[u8], max_lines: usize) -> ApiResult<Parsed> {
    let mut p = LineParser::new(max_lines);
    p.feed(bytes)?;
    p.finish()
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_are_read_line_by_line_with_their_numbers() {
        let p =
            parse_upload(b"user_id,name\nu-1,Ann\n\n\"u-2\"\nu-1\nnot a user!\nu-3\r\n").unwrap();
        let users: Vec<&str> = p.users.iter().map(UserId::as_str).collect();
        assert_eq!(users, vec!["u-1", "u-2", "u-3"]);
        assert_eq!((p.duplicates, p.invalid), (1, 1));
        assert_eq!(
            p.invalid_lines,
            vec![InvalidLine {
                line: 6,
                text: "not a user!".into()
            }]
        );
        assert!(parse_upload(&[0xff, 0xfe]).is_err());
        let many = "u\n".repeat(5);
        assert_eq!(parse_upload(many.as_bytes()).unwrap().duplicates, 4);
    }

    #[test]
    fn a_byte_order_mark_is_dropped_and_a_lone_cr_ends_a_line() {
        for upload in [
            "\u{feff}u-1\nu-2",
            "\u{feff}user_id\r\nu-1\r\nu-2\r\n",
            "u-1\ru-2\r",
            "\u{feff}user_id\ru-1\r\ru-2",
        ] {
            let p = parse_upload(upload.as_bytes()).unwrap();
            let users: Vec<&str> = p.users.iter().map(UserId::as_str).collect();
            assert_eq!((users, p.invalid), (vec!["u-1", "u-2"], 0), "{upload:?}");
        }
    }

    #[test]
    fn a_huge_line_is_judged_by_its_start_without_being_kept() {
        let mut upload = b"u-1,".to_vec();
        upload.extend(std::iter::repeat_n(b'x', 10 * MAX_LINE_BYTES));
        upload.extend_from_slice("é\nu-2\n".as_bytes());
        let mut p = LineParser::new(MAX_LINES);
        for chunk in upload.chunks(1000) {
            p.feed(chunk).unwrap();
            assert!(p.lines.held() <= MAX_LINE_BYTES);
        }
        let users: Vec<String> = p
            .finish()
            .unwrap()
            .users
            .iter()
            .map(|u| u.as_str().to_owned())
            .collect();
        assert_eq!(users, ["u-1", "u-2"]);
    }
}
