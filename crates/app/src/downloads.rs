//! Downloads too large to hold at once, answered as a stream of CSV pieces ([`CsvStream`]):
//! every holder of a template's coupons, and a batch's codes. Each piece is read when the
//! reader is ready for it (one page in memory at most); a failure mid-stream ends it early,
//! so a reader sees a truncated file, never a wrong one. Both front doors send the same
//! stream.

use std::pin::Pin;

use coupond_domain::{Coupon, CsvWriter, TemplateId, Timestamp};
use futures_util::Stream;

use crate::caller::Principal;
use crate::context::App;
use crate::coupons::HoldersFilter;
use crate::error::AppResult;
use crate::pages::PageRequest;

/// A CSV a piece at a time, the header line in the first.
pub type CsvStream = Pin<Box<dyn Stream<Item = std::io::Result<String>> + Send>>;

/// Codes per piece of a batch's CSV.
const CODES_PER_PIECE: u32 = 5_000;

/// The holders CSV's columns.
const HOLDERS_HEADER: [&str; 9] = [
    "coupon_id",
    "user_id",
    "status",
    "claimed_at",
    "valid_until",
    "used_at",
    "order_id",
    "discount",
    "code",
];

/// Coupons as CSV lines (their status at `now`), after the header line when `header`.
pub fn holders_csv(coupons: &[Coupon], now: Timestamp, header: bool) -> String {
    let mut w = if header {
        CsvWriter::with_header(&HOLDERS_HEADER)
    } else {
        CsvWriter::new()
    };
    for c in coupons {
        w.number(c.id.get())
            .text(c.user_id.as_str())
            .text(c.status(now).as_str())
            .text(&c.claimed_at.to_string())
            .text(&c.valid_until.to_string())
            .optional(c.used_at.map(|t| t.to_string()).as_deref())
            .optional(c.order_id.as_ref().map(|o| o.as_str()))
            .optional_number(c.discount.map(|d| d.minor()))
            .optional(c.code.as_deref())
            .end_line();
    }
    w.finish()
}

impl App {
    /// Every coupon of template `id` that `filter` picks, from `page`'s cursor on, as one CSV
    /// read `page.limit` rows (default `max_page`) at a time, if `p` may see the template.
    pub async fn every_holder_csv(
        &self,
        p: &Principal,
        id: TemplateId,
        filter: HoldersFilter,
        mut page: PageRequest,
    ) -> AppResult<CsvStream> {
        page.limit = page.limit.or(Some(self.settings().max_page));
        let (_, first) = self.holders_query(p, id, filter, page).await?;
        let app = self.clone();
        let pieces = futures_util::stream::unfold(Some((first, true)), move |next| {
            let app = app.clone();
            async move {
                let (mut q, header) = next?;
                match app.holder_rows(&q).await {
                    Ok(mut rows) => {
                        // `limit` asks for one row more than a page: whether another follows.
                        let more = rows.len() >= q.limit as usize;
                        rows.truncate(q.limit.saturating_sub(1) as usize);
                        let piece = holders_csv(&rows, q.now, header);
                        q.after = rows.last().map(|c| c.id.get());
                        let next = (more && q.after.is_some()).then_some((q, false));
                        Some((Ok(piece), next))
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "the holders CSV ended early");
                        let cut = std::io::Error::other("reading the holders failed");
                        Some((Err(cut), None))
                    }
                }
            }
        });
        Ok(Box::pin(pieces))
    }

    /// Every code of batch `id` (`code`, `redeemed_by`, `redeemed_at`), once generated, if `p`
    /// may see its template.
    pub async fn batch_codes_csv(&self, p: &Principal, id: i64) -> AppResult<CsvStream> {
        let batch = self.finished_code_batch(p, id).await?;
        let app = self.clone();
        let pieces = futures_util::stream::unfold(Some(None::<String>), move |after| {
            let (app, batch) = (app.clone(), batch.clone());
            async move {
                let after = after?;
                let mut w = if after.is_none() {
                    CsvWriter::with_header(&["code", "redeemed_by", "redeemed_at"])
                } else {
                    CsvWriter::new()
                };
                match app
                    .batch_codes(&batch, after.as_deref(), CODES_PER_PIECE)
                    .await
                {
                    Ok(codes) => {
                        for c in &codes {
                            w.text(&c.code)
                                .optional(c.redeemed_by.as_ref().map(|u| u.as_str()))
                                .optional(c.redeemed_at.map(|at| at.to_string()).as_deref())
                                .end_line();
                        }
                        let next = (codes.len() == CODES_PER_PIECE as usize)
                            .then(|| codes.last().map(|c| c.code.clone()));
                        Some((Ok(w.finish()), next))
                    }
                    Err(e) => Some((Err(std::io::Error::other(e)), None)),
                }
            }
        });
        Ok(Box::pin(pieces))
    }
}
