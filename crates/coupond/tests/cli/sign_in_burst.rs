//! Sign-in bursts (issue 61 point 1): anyone may post the console's sign-in form, and each
//! check is an argon2id verification holding 19 MiB. Sent all at once, attempts are counted
//! as they are let through (not after their checks finish), and the checks running at once are
//! bounded by `console.password_hashes`, so the server's memory stays within a bound however
//! many arrive; the ones past the bounds get 429 or 503 with `Retry-After`.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use crate::{start_server, terminate_and_wait};

/// The server's peak resident memory so far (`VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// One sign-in POST from the local address `from` (any of 127.0.0.0/8): the status and
/// whether the answer carried `Retry-After`.
async fn sign_in(addr: std::net::SocketAddr, from: [u8; 4], email: String) -> (u16, bool) {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind((std::net::Ipv4Addr::from(from), 0).into())
        .unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let body = format!("email={email}&password=not+the+password+at+all");
    let request = format!(
        "POST /console/login HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer}"));
    (status, answer.contains("\r\nretry-after: "))
}

/// Sends every `(from, email)` sign-in at once; the statuses with their `Retry-After`.
fn burst(base: &str, attempts: Vec<([u8; 4], String)>) -> Vec<(u16, bool)> {
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = attempts
            .into_iter()
            .map(|(from, email)| tokio::spawn(sign_in(addr, from, email)))
            .collect();
        let mut answers = Vec::new();
        for t in tasks {
            let answer = tokio::time::timeout(Duration::from_secs(60), t).await;
            answers.push(answer.expect("every sign-in answered").unwrap());
        }
        answers
    })
}

#[test]
fn a_burst_of_sign_ins_is_throttled_and_bounded_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/burst.db", dir.path().display());
    let env = [("COUPOND_CONSOLE_PASSWORD_HASHES", "2")];
    let (server, base) = start_server(dir.path(), &db, "127.0.0.1:0", &env);
    let pid = server.id();
    // One sign-in first, so that what a single check costs is in the baseline.
    burst(&base, vec![([127, 0, 0, 200], "warm@example.com".into())]);
    let before = peak_rss_kib(pid);

    // 60 at once for one email from one address: past the 5 free failures, the rest are
    // refused without a check, even though none had finished when they arrived. The sixth
    // failure makes the next attempt wait 1 s, then 2 s, 4 s, ...: on a loaded machine the 60
    // arrive over some seconds, and one more may pass each time a wait has run out, so the
    // bound allows one more per doubling of the time the burst took. Counted after the checks
    // (the bug this guards against), every attempt that arrived before six checks had finished
    // was let through.
    let same: Vec<_> = (0..60)
        .map(|_| ([127, 0, 0, 2], "ada@example.com".to_owned()))
        .collect();
    let started = std::time::Instant::now();
    let answers = burst(&base, same);
    let checked = answers.iter().filter(|a| a.0 == 401).count();
    let waits_run_out = (started.elapsed().as_secs_f64() + 1.0).log2().floor() as usize;
    assert!(
        checked <= 6 + waits_run_out,
        "{checked} of 60 checked in {:?}: {answers:?}",
        started.elapsed()
    );
    assert!(
        answers
            .iter()
            .all(|&(status, retry)| status == 401 || (matches!(status, 429 | 503) && retry)),
        "{answers:?}"
    );

    // 150 at once, each its own email and address (no throttle applies): the checks run at
    // most two at a time, and the rest wait their turn or are refused with Retry-After.
    let spread: Vec<_> = (0..150u8)
        .map(|i| ([127, 0, 1, i + 1], format!("nobody{i}@example.com")))
        .collect();
    let answers = burst(&base, spread);
    assert!(
        answers
            .iter()
            .all(|&(status, retry)| status == 401 || (status == 503 && retry)),
        "{answers:?}"
    );
    assert!(answers.iter().any(|a| a.0 == 401), "some were checked");
    let grown_mib = peak_rss_kib(pid).saturating_sub(before) / 1024;
    // Two checks of 19 MiB at once, and room for the connections and allocator; unbounded,
    // 150 checks at once took over 2.5 GiB.
    assert!(grown_mib < 128, "peak memory grew {grown_mib} MiB");
    assert!(terminate_and_wait(server).success());
}
