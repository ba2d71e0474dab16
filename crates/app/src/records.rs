//! The records services answer with, as they are kept (the store's own types, named here so
//! that the front doors need nothing from the store): front doors render them, never write
//! them.

pub use coupond_store::audit::{self, AuditEntry, Who};
pub use coupond_store::{
    ApiKey, Baseline, CampaignMessage, CodeBatch, Event, HoldersQuery, InvalidLine, Issuance,
    IssuanceKey, NewTagUpload, Page, PromoCode, TagUpload,
};
