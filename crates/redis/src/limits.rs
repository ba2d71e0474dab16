//! Rate limits counted in Redis, for every instance at once.
//!
//! The rule is the in-process one (GCRA, as the `governor` crate counts): a key's theoretical
//! arrival time (TAT) moves on by one interval (1 / rate) per admitted request, and a request
//! is admitted while the TAT is at most `burst - 1` intervals ahead of now. One Lua script
//! checks every limit of a request and counts it in all of them or none, in one round trip,
//! on Redis's clock (instances' clocks may differ). Keys expire once back at a full burst.

use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use coupond_engine::shared::{LimitAsk, LimitsUnavailable, SharedLimits};

use crate::{count_error, Redis};

/// KEYS: one per limit. ARGV: per key, its interval and its tolerance (interval x (burst -
/// 1)), in microseconds. Answers {0, 0} when admitted (and counted in every key), else the
/// 1-based index of a key over its rate and the microseconds until it would admit (nothing
/// counted). Numbers are Lua doubles: microseconds since 1970 fit in their 53 bits.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tats = {}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local tolerance = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  local wait = tat - now - tolerance
  if wait > 0 then return {i, wait} end
  tats[i] = tat + interval
end
for i, key in ipairs(KEYS) do
  local ttl = math.ceil((tats[i] - now) / 1000) + 1
  redis.call('SET', key, string.format('%.0f', tats[i]), 'PX', ttl)
end
return {0, 0}
";

fn script() -> &'static redis::Script {
    static SCRIPT: OnceLock<redis::Script> = OnceLock::new();
    SCRIPT.get_or_init(|| redis::Script::new(GCRA))
}

#[async_trait]
impl SharedLimits for Redis {
    async fn check(
        &self,
        asks: &[LimitAsk<'_>],
    ) -> Result<Option<(usize, Duration)>, LimitsUnavailable> {
        if asks.is_empty() {
            return Ok(None);
        }
        let mut invocation = script().prepare_invoke();
        for ask in asks {
            let interval = 1_000_000 / u64::from(ask.per_second.max(1));
            let tolerance = interval * u64::from(ask.burst.max(1) - 1);
            invocation
                .key(format!("{}:rl:{}:{}", self.prefix, ask.name, ask.key))
                .arg(interval)
                .arg(tolerance);
        }
        let mut conn = self.conn.clone();
        let answer: (i64, i64) = self
            .bounded(invocation.invoke_async(&mut conn))
            .await
            .map_err(|e| {
                count_error("rate_limit");
                LimitsUnavailable(e.to_string())
            })?;
        Ok(match answer {
            (0, _) => None,
            (i, wait) => {
                let index = usize::try_from(i - 1).unwrap_or(0).min(asks.len() - 1);
                let wait = Duration::from_micros(u64::try_from(wait).unwrap_or(0));
                Some((index, wait))
            }
        })
    }
}
