-- wrk script for bench/claim-floor.py: each request claims template WRK_TEMPLATE with the
-- service key WRK_KEY for a new user, or (WRK_INVALID=1) names a user id the API refuses, so
-- the request costs authentication, the JSON body and a 422 problem but no claim.
local counter = 0
local thread_id = 0
local threads = {}
function setup(thread)
  thread:set("id", thread_id)
  thread_id = thread_id + 1
  table.insert(threads, thread)
end
function init(args)
  path = "/v1/templates/" .. os.getenv("WRK_TEMPLATE") .. "/claims"
  headers = {["Authorization"] = "Bearer " .. os.getenv("WRK_KEY"),
             ["Content-Type"] = "application/json"}
  prefix = (os.getenv("WRK_INVALID") == "1") and "not a user " or "u"
  answered = 0
end
function request()
  counter = counter + 1
  return wrk.format("POST", path, headers, '{"user_id":"' .. prefix .. id .. '-' .. counter .. '"}')
end
function response(status, hdrs, body)
  local want = (prefix == "u") and 201 or 422
  if status == want then answered = answered + 1 end
end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("answered") end
  io.write(string.format("answered %d\n", total))
end
