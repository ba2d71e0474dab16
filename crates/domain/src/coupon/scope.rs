//! Which order lines a coupon applies to: what the scope covers, less what it excludes.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::checkout::{LineDraft, MAX_PRODUCT_ID_CHARS};
use crate::error::{DomainError, Findings};
use crate::ids::{CategoryId, ListingId, MerchantId};
use crate::text::check_text;

/// Which order lines a coupon applies to: the lines `type` covers, less the `exclude`d ones.
/// Excluded lines never count towards a threshold, a quantity or a discount.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "ScopeWire")]
pub struct Scope {
    #[serde(flatten)]
    pub coverage: Coverage,
    #[serde(default, skip_serializing_if = "Exclusions::is_empty")]
    pub exclude: Exclusions,
}

/// A scope as written: one object with `type`, its `ids` and `exclude`, any other key refused
/// (serde's flattening would pass an unknown key to `type`'s variant, where `all` and
/// `merchant` ignore it: a misspelt `exclude` would be dropped without a word).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeWire {
    #[serde(rename = "type")]
    kind: CoverageKind,
    /// Read for `categories` and `listings`; `all` and `merchant` have none and ignore it, as
    /// they always have.
    #[serde(default)]
    ids: Option<Vec<i64>>,
    #[serde(default)]
    exclude: Exclusions,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum CoverageKind {
    All,
    Merchant,
    Categories,
    Listings,
}

impl TryFrom<ScopeWire> for Scope {
    type Error = String;
    fn try_from(w: ScopeWire) -> Result<Scope, String> {
        fn ids<T>(
            ids: Option<Vec<i64>>,
            make: fn(i64) -> Result<T, String>,
        ) -> Result<Vec<T>, String> {
            ids.ok_or_else(|| "missing field `ids`".to_owned())?
                .into_iter()
                .map(make)
                .collect()
        }
        let coverage = match w.kind {
            CoverageKind::All => Coverage::All,
            CoverageKind::Merchant => Coverage::Merchant,
            CoverageKind::Categories => Coverage::Categories {
                ids: ids(w.ids, CategoryId::new)?,
            },
            CoverageKind::Listings => Coverage::Listings {
                ids: ids(w.ids, ListingId::new)?,
            },
        };
        Ok(Scope {
            coverage,
            exclude: w.exclude,
        })
    }
}

/// The lines a scope covers.
// (The designs' `use_range`: 0 all, 1 merchant, 2 category, 3 product.)
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Coverage {
    /// Every line.
    #[default]
    All,
    /// Lines of the template's merchant.
    Merchant,
    /// Lines in these categories.
    Categories { ids: Vec<CategoryId> },
    /// These listings.
    Listings { ids: Vec<ListingId> },
}

impl From<Coverage> for Scope {
    fn from(coverage: Coverage) -> Scope {
        Scope {
            coverage,
            exclude: Exclusions::default(),
        }
    }
}

/// Lines a scope leaves out, whatever it covers: a line matching any list is excluded. Each
/// list holds at most [`Scope::MAX_IDS`] entries, kept sorted without repeats (however it was
/// written), so each lookup is a binary search.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Exclusions {
    /// The order service's product ids.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "sorted"
    )]
    product_ids: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "sorted"
    )]
    category_ids: Vec<CategoryId>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "sorted"
    )]
    listing_ids: Vec<ListingId>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "sorted"
    )]
    merchant_ids: Vec<MerchantId>,
}

fn sorted<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Ord,
{
    let mut v = Vec::<T>::deserialize(d)?;
    tidy(&mut v);
    Ok(v)
}

fn tidy<T: Ord>(v: &mut Vec<T>) {
    v.sort_unstable();
    v.dedup();
}

impl Exclusions {
    /// These lists, sorted without repeats.
    pub fn new(
        mut product_ids: Vec<String>,
        mut category_ids: Vec<CategoryId>,
        mut listing_ids: Vec<ListingId>,
        mut merchant_ids: Vec<MerchantId>,
    ) -> Self {
        tidy(&mut product_ids);
        tidy(&mut category_ids);
        tidy(&mut listing_ids);
        tidy(&mut merchant_ids);
        Exclusions {
            product_ids,
            category_ids,
            listing_ids,
            merchant_ids,
        }
    }

    pub fn product_ids(&self) -> &[String] {
        &self.product_ids
    }

    pub fn category_ids(&self) -> &[CategoryId] {
        &self.category_ids
    }

    pub fn listing_ids(&self) -> &[ListingId] {
        &self.listing_ids
    }

    pub fn merchant_ids(&self) -> &[MerchantId] {
        &self.merchant_ids
    }

    pub fn is_empty(&self) -> bool {
        self.product_ids.is_empty()
            && self.category_ids.is_empty()
            && self.listing_ids.is_empty()
            && self.merchant_ids.is_empty()
    }

    /// Whether `line` is left out.
    pub fn excludes(&self, line: &LineDraft) -> bool {
        self.category_ids.binary_search(&line.category_id).is_ok()
            || self.merchant_ids.binary_search(&line.merchant_id).is_ok()
            || line
                .listing_id
                .is_some_and(|id| self.listing_ids.binary_search(&id).is_ok())
            || line.product_id.as_deref().is_some_and(|p| {
                self.product_ids
                    .binary_search_by(|x| x.as_str().cmp(p))
                    .is_ok()
            })
    }

    fn validate(&self) -> Result<(), DomainError> {
        let mut found = Findings::default();
        let lens = [
            ("product_ids", self.product_ids.len()),
            ("category_ids", self.category_ids.len()),
            ("listing_ids", self.listing_ids.len()),
            ("merchant_ids", self.merchant_ids.len()),
        ];
        for (field, n) in lens {
            if n > Scope::MAX_IDS {
                found.check::<()>(Err(DomainError::invalid(
                    field,
                    "invalid_scope",
                    format!("at most {} ids", Scope::MAX_IDS),
                )));
            }
        }
        for (i, p) in self.product_ids.iter().enumerate() {
            found.check(check_text(
                &format!("product_ids[{i}]"),
                p,
                1,
                MAX_PRODUCT_ID_CHARS,
            ));
        }
        found.done()
    }
}

impl Scope {
    /// Most ids a scope, or one of its exclusion lists, names.
    pub const MAX_IDS: usize = 1000;

    /// Every line, nothing excluded.
    pub fn all() -> Scope {
        Coverage::All.into()
    }

    /// Checks the scope: a merchant scope needs a merchant's template; 1 to
    /// [`Scope::MAX_IDS`] ids, and at most as many in each exclusion list.
    pub fn validate(&self, has_merchant: bool) -> Result<(), DomainError> {
        let mut found = Findings::default();
        found.check(self.coverage.validate(has_merchant));
        found.check(self.exclude.validate().map_err(|e| e.within("exclude")));
        found.done().map_err(|e| e.within("scope"))
    }
}

impl Coverage {
    fn validate(&self, has_merchant: bool) -> Result<(), DomainError> {
        let ids_len = match self {
            Coverage::All => return Ok(()),
            Coverage::Merchant if has_merchant => return Ok(()),
            Coverage::Merchant => {
                return Err(DomainError::invalid(
                    "",
                    "invalid_scope",
                    "a merchant scope needs a template owned by a merchant",
                ))
            }
            Coverage::Categories { ids } => ids.len(),
            Coverage::Listings { ids } => ids.len(),
        };
        if ids_len == 0 || ids_len > Scope::MAX_IDS {
            return Err(DomainError::invalid(
                "ids",
                "invalid_scope",
                format!("between 1 and {} ids", Scope::MAX_IDS),
            ));
        }
        Ok(())
    }
}
