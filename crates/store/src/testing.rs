//! The conformance suite: the behaviour every backend must have, written once.
//!
//! A backend's integration test calls [`conformance_suite!`](crate::conformance_suite) with an
//! async factory `fn(&'static str) -> Option<Arc<dyn Store>>` that returns a store on a fresh,
//! empty database for the named case (or `None`, after printing why, to skip). Each case
//! becomes its own `#[tokio::test]`, so cases run in parallel and fail by name.

pub mod bench;
pub mod cases;
pub mod fixtures;

/// Expands to one `#[tokio::test]` per conformance case, each on a fresh store from `$factory`.
#[macro_export]
macro_rules! conformance_suite {
    ($factory:path) => {
        $crate::conformance_suite!(@cases $factory;
            settings_init_once,
            api_keys_round_trip,
            merchants_round_trip,
            merchants_list_by_city_and_name,
            merchant_edits_never_lose_a_concurrent_one,
            listings_round_trip,
            activities_round_trip,
            activity_status_filter_matches_domain,
            activity_city_filters,
            activity_pagination,
            abort_activity_aborts_its_templates,
            templates_round_trip,
            stored_records_tolerate_new_fields_and_reject_broken_ones,
            template_status_filter_matches_domain,
            template_insert_checks_activity_version,
            template_publish_and_abort,
            concurrent_updates_one_wins,
            activity_edit_moves_following_templates,
            listings_update_and_search,
            bind_limit_holds_under_concurrency,
            abort_releases_bindings,
            console_sessions_end_with_sign_out_expiry_and_their_key,
            operators_round_trip,
            operators_lose_their_sessions_when_disabled_or_their_password_changes,
            operators_password_resets_work_once,
            operators_second_factor_steps_are_used_once,
            invitations_are_accepted_once_into_an_operator,
            audit_entries_commit_with_their_change,
            audit_runs_queue_once_and_keep_their_findings,
            contacts_texts_and_the_delivery_log,
            campaign_messages_cap_page_and_send_once,
            ended_templates_free_their_binding_slots,
            claims_stop_at_the_stock,
            since_counts_coupons_of_the_period_and_the_merchant,
            standing_counts_what_is_claimable_and_low,
            claims_respect_the_per_user_limit,
            claims_outside_the_window_or_aborted_leave_nothing,
            concurrent_batches_never_over_issue,
            stock_runs_out_everywhere_before_sold_out,
            chunks_of_one_job_at_once_issue_each_user_once,
            concurrent_claims_of_one_user_hold_the_limit,
            wallets_list_soonest_expiring_first,
            claim_keys_replay_the_same_coupon,
            claims_write_the_log_and_the_outbox,
            trimmed_batches_leave_no_events,
            shared_codes_are_unique,
            code_batches_fill_exactly,
            single_use_codes_give_one_coupon,
            orders_lock_then_confirm,
            orders_cancel_and_expire,
            confirms_race_the_sweeper,
            lock_deadlines_move_later_only,
            locks_end_with_their_coupons_validity,
            one_coupon_one_lock,
            confirm_verifies_amounts,
            orders_without_a_coupon_are_recorded_once,
            idempotency_records,
            audit_finds_nothing_after_every_flow,
            leases_have_one_holder,
            transitions_are_announced_once,
            coupons_expire_once,
            outbox_positions,
            reminders_and_inbox,
            issuance_keys_start_one_job,
            revokes_end_a_coupon_for_good,
            refunds_return_coupons,
            refunds_void_coupons_and_refuse_open_orders,
            deletes_and_history,
            refunds_and_revokes_race_once,
            user_tags_and_segments,
            last_seen_only_moves_later_and_filters_active_users,
            tag_limit_holds_under_concurrent_writers,
            tag_audiences_are_checked_in_the_claim,
            tag_uploads_resume_and_key_once,
            tags_are_shared_explicitly,
            cities_are_named_and_listed,
            webhook_pings_and_deletes,
            a_pause_holds_claims_until_resumed,
            a_live_stock_lowers_to_what_is_claimed,
        );
    };
    (@cases $factory:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                if let Some(store) = $factory(stringify!($case)).await {
                    $crate::testing::cases::$case(store.clone()).await;
                    store.close().await;
                }
            }
        )*
    };
}
