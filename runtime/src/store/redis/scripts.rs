//! The Redis store's Lua scripts: each change that reads before it writes runs as one script,
//! so two replicas never interleave inside it. Every record key is indexed by its expiry in
//! one sorted set (`<prefix>expiry`), which [`Store::sweep`](crate::store::Store::sweep)
//! walks; each key also gets a Redis expiry a day past its own, in case no replica sweeps.

use redis::Script;

/// What every script shares: the prefix (`ARGV[1]`), Redis's clock, optional hash fields and
/// the expiry index.
const PRELUDE: &str = r"
local P = ARGV[1]
local function fmt(n) return string.format('%d', n) end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function opt(key, field, v)
  if string.sub(v, 1, 1) == '+' then
    redis.call('HSET', key, field, string.sub(v, 2))
  else
    redis.call('HDEL', key, field)
  end
end
local function running(status)
  return status == 'working' or status == 'input_required'
end
local function keep_until(key, expires)
  local want = math.min(math.max(expires, now_ms()) + 86400000, 4503599627370496) - now_ms()
  local left = redis.call('PTTL', key)
  if left < 0 or left < want then redis.call('PEXPIRE', key, fmt(want)) end
end
local function index(key, expires)
  redis.call('ZADD', P .. 'expiry', fmt(math.min(expires, 4503599627370496)), key)
  keep_until(key, expires)
end
local function index_later(key, expires)
  redis.call('ZADD', P .. 'expiry', 'GT', fmt(math.min(expires, 4503599627370496)), key)
  keep_until(key, expires)
end
";

/// Record a task unless the running ones fill a limit. ARGV: prefix, id, owner, status,
/// message?, created, updated, ttl, poll, expires, input?, result?, error?, per server, per
/// owner (-1: none), lease. Returns `{0, 0}` inserted, `{1, n}` owner full, `{2, n}` server full.
const INSERT_TASK: &str = r"
local live = P .. 'tasks:live'
local now = now_ms()
local created, lease = tonumber(ARGV[6]), tonumber(ARGV[16])
local server, mine = 0, 0
for _, id in ipairs(redis.call('SMEMBERS', live)) do
  local f = redis.call('HMGET', P .. 'task:' .. id, 'status', 'owner', 'alive', 'expires')
  if not f[1] or not running(f[1]) then
    redis.call('SREM', live, id)
  elseif tonumber(f[4]) >= created and tonumber(f[3]) >= now - lease then
    server = server + 1
    if f[2] == ARGV[3] then mine = mine + 1 end
  end
end
if server >= tonumber(ARGV[14]) then return {2, server} end
local per_owner = tonumber(ARGV[15])
if per_owner >= 0 and mine >= per_owner then return {1, mine} end
local k = P .. 'task:' .. ARGV[2]
redis.call('DEL', k)
redis.call('HSET', k, 'owner', ARGV[3], 'status', ARGV[4], 'created', ARGV[6],
  'updated', ARGV[7], 'ttl', ARGV[8], 'poll', ARGV[9], 'expires', ARGV[10], 'alive', fmt(now))
opt(k, 'message', ARGV[5]); opt(k, 'input', ARGV[11]); opt(k, 'result', ARGV[12]); opt(k, 'error', ARGV[13])
if running(ARGV[4]) then redis.call('SADD', live, ARGV[2]) end
index(k, tonumber(ARGV[10]))
local mine_key = P .. 'owner:' .. ARGV[3]
-- The owner's tasks by creation; those made a lifetime before this one are gone by now.
redis.call('ZREMRANGEBYSCORE', mine_key, '-inf', '(' .. fmt(created - tonumber(ARGV[8])))
redis.call('ZADD', mine_key, ARGV[6], ARGV[2])
index_later(mine_key, tonumber(ARGV[10]))
return {0, 0}
";

/// Change a task that has not finished. ARGV: prefix, id, status, message?, updated, input?,
/// result?, error?.
const UPDATE_TASK: &str = r"
local k = P .. 'task:' .. ARGV[2]
local status = redis.call('HGET', k, 'status')
if not status or not running(status) then return 0 end
redis.call('HSET', k, 'status', ARGV[3], 'updated', ARGV[5])
opt(k, 'message', ARGV[4]); opt(k, 'input', ARGV[6]); opt(k, 'result', ARGV[7]); opt(k, 'error', ARGV[8])
if not running(ARGV[3]) then redis.call('SREM', P .. 'tasks:live', ARGV[2]) end
return 1
";

/// Mark tasks alive by Redis's clock. ARGV: prefix, ids...
const TOUCH_TASKS: &str = r"
local now = fmt(now_ms())
for i = 2, #ARGV do
  local k = P .. 'task:' .. ARGV[i]
  if redis.call('EXISTS', k) == 1 then redis.call('HSET', k, 'alive', now) end
end
return 0
";

/// Fail a running task nobody marked alive within the lease. ARGV: prefix, id, status,
/// message?, updated, error?, lease. Returns 1 when failed now.
const FAIL_ABANDONED: &str = r"
local k = P .. 'task:' .. ARGV[2]
local f = redis.call('HMGET', k, 'status', 'alive')
if not f[1] or not running(f[1]) then return 0 end
if tonumber(f[2]) >= now_ms() - tonumber(ARGV[7]) then return 0 end
redis.call('HSET', k, 'status', ARGV[3], 'updated', ARGV[5])
opt(k, 'message', ARGV[4]); opt(k, 'error', ARGV[6]); redis.call('HDEL', k, 'input')
redis.call('SREM', P .. 'tasks:live', ARGV[2])
return 1
";

/// Issue a token unless its holder holds `limit` unspent ones. ARGV: prefix, id, holder,
/// issued, expires, limit, operation, params. Returns 1 when issued.
const ISSUE_TOKEN: &str = r"
local held = P .. 'tokens:' .. ARGV[3]
redis.call('ZREMRANGEBYSCORE', held, '-inf', '(' .. ARGV[4])
if redis.call('ZCARD', held) >= tonumber(ARGV[6]) then return 0 end
local k = P .. 'token:' .. ARGV[2]
redis.call('DEL', k)
redis.call('HSET', k, 'holder', ARGV[3], 'operation', ARGV[7], 'params', ARGV[8], 'spent', '0')
redis.call('ZADD', held, ARGV[5], ARGV[2])
index(k, tonumber(ARGV[5]))
keep_until(held, tonumber(ARGV[5]))
return 1
";

/// Spend a token once. ARGV: prefix, id, holder, operation, params. Returns `{0}` unknown,
/// `{1}` already used, `{2, operation}` issued for another operation, `{3}` spent now.
const SPEND_TOKEN: &str = r"
local k = P .. 'token:' .. ARGV[2]
local f = redis.call('HMGET', k, 'holder', 'operation', 'params', 'spent')
if not f[1] or f[1] ~= ARGV[3] then return {0, false} end
if f[4] == '1' then return {1, false} end
if f[2] ~= ARGV[4] or f[3] ~= ARGV[5] then return {2, f[2]} end
redis.call('HSET', k, 'spent', '1')
redis.call('ZREM', P .. 'tokens:' .. ARGV[3], ARGV[2])
return {3, false}
";

/// Claim an idempotency key (`KEYS[1]`), or take over one whose window ended. ARGV: prefix,
/// digest, now, expires, owner, lease. Returns `{1}` claimed, or `{0, digest, started,
/// lease, outcome|nil}`.
const CLAIM: &str = r"
local k = KEYS[1]
local f = redis.call('HMGET', k, 'digest', 'started', 'lease', 'outcome', 'expires')
if not f[1] or tonumber(f[5]) < tonumber(ARGV[3]) then
  redis.call('DEL', k)
  redis.call('HSET', k, 'digest', ARGV[2], 'started', ARGV[3], 'expires', ARGV[4],
    'owner', ARGV[5], 'lease', ARGV[6])
  index(k, tonumber(ARGV[4]))
  return {1, false, false, false, false}
end
return {0, f[1], f[2], f[3], f[4]}
";

/// Record a claim's outcome, by its owner. KEYS[1]: the claim; ARGV: prefix, owner, outcome.
const SETTLE: &str = r"
if redis.call('HGET', KEYS[1], 'owner') == ARGV[2] then
  redis.call('HSET', KEYS[1], 'outcome', ARGV[3])
end
return 0
";

/// Move a running claim's lease on, by its owner. KEYS[1]: the claim; ARGV: prefix, owner,
/// lease.
const RENEW: &str = r"
local f = redis.call('HMGET', KEYS[1], 'owner', 'outcome', 'lease')
if f[1] == ARGV[2] and not f[2] and tonumber(f[3]) < tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], 'lease', ARGV[3])
end
return 0
";

/// Free a running claim, by its owner. KEYS[1]: the claim; ARGV: prefix, owner.
const RELEASE: &str = r"
local f = redis.call('HMGET', KEYS[1], 'owner', 'outcome')
if f[1] == ARGV[2] and not f[2] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', P .. 'expiry', KEYS[1])
end
return 0
";

/// Take one call from a rate budget (GCRA, by Redis's clock). KEYS[1]: the budget; ARGV:
/// prefix, interval, period. Returns `{1}` allowed or `{0, wait}`.
const TAKE_RATE: &str = r"
local now = now_ms()
local interval, period = tonumber(ARGV[2]), tonumber(ARGV[3])
local due = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), now) + interval
if due - now <= period then
  redis.call('SET', KEYS[1], fmt(due), 'PX', fmt(due - now))
  return {1, 0}
end
return {0, due - now - period}
";

/// Queue a message for the taker of `KEYS[1]` and announce it. ARGV: prefix, expires,
/// channel, announcement, message.
const QUEUE: &str = r"
local seq = redis.call('INCR', P .. 'seq')
redis.call('RPUSH', KEYS[1], fmt(seq) .. ' ' .. ARGV[5])
index_later(KEYS[1], tonumber(ARGV[2]))
redis.call('PUBLISH', ARGV[3], ARGV[4])
return seq
";

/// Take every message queued for `KEYS...`, in one step. ARGV: prefix. Returns `{key index,
/// message, ...}`, each message prefixed with its sequence number.
const TAKE_QUEUED: &str = r"
local out = {}
for i, k in ipairs(KEYS) do
  local items = redis.call('LRANGE', k, 0, -1)
  if #items > 0 then
    redis.call('DEL', k)
    redis.call('ZREM', P .. 'expiry', k)
    for _, item in ipairs(items) do
      table.insert(out, i)
      table.insert(out, item)
    end
  end
end
return out
";

/// Keep a session. KEYS[1]: the session; ARGV: prefix, state, expires.
const PUT_SESSION: &str = r"
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'expires', ARGV[3])
index(KEYS[1], tonumber(ARGV[3]))
return 0
";

/// Move sessions' expiry on (never back). ARGV: prefix, expires, ids... Returns the ids of
/// the sessions no longer kept.
const TOUCH_SESSIONS: &str = r"
local expires = tonumber(ARGV[2])
local gone = {}
for i = 3, #ARGV do
  local k = P .. 'session:' .. ARGV[i]
  local was = redis.call('HGET', k, 'expires')
  if not was then
    table.insert(gone, ARGV[i])
  elseif tonumber(was) < expires then
    redis.call('HSET', k, 'expires', ARGV[2])
    index(k, expires)
  end
end
return gone
";

/// Change a session's state if it is still `expected`, and announce it. KEYS[1]: the
/// session; ARGV: prefix, state, expires, expected, channel, announcement. Returns 1 when
/// changed.
const UPDATE_SESSION: &str = r"
if redis.call('HGET', KEYS[1], 'state') ~= ARGV[4] then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'expires', ARGV[3])
index(KEYS[1], tonumber(ARGV[3]))
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
";

/// End a session and announce it. KEYS[1]: the session; ARGV: prefix, channel,
/// announcement. Returns 1 when it was kept.
const DELETE_SESSION: &str = r"
local gone = redis.call('DEL', KEYS[1])
redis.call('ZREM', P .. 'expiry', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return gone
";

/// Add a message to a stream and announce it. KEYS[1]: the stream; ARGV: prefix, expires,
/// channel, announcement, message. Each stream keeps its last 10,000 messages (and goes
/// once its last one expires). Returns the message's position.
const APPEND_TO_STREAM: &str = r"
local position = redis.call('INCR', P .. 'position')
redis.call('ZADD', KEYS[1], position, fmt(position) .. ' ' .. ARGV[5])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -10001)
index_later(KEYS[1], tonumber(ARGV[2]))
redis.call('PUBLISH', ARGV[3], ARGV[4])
return position
";

/// The messages of streams `KEYS...` after a position, oldest first. ARGV: prefix, after,
/// limit. Returns `{last position, key index, message, ...}`, each message prefixed with its
/// position.
const READ_STREAMS: &str = r"
local out = {tonumber(redis.call('GET', P .. 'position') or '0')}
for i, k in ipairs(KEYS) do
  local items = redis.call('ZRANGEBYSCORE', k, '(' .. ARGV[2], '+inf', 'LIMIT', 0, tonumber(ARGV[3]))
  for _, item in ipairs(items) do
    table.insert(out, i)
    table.insert(out, item)
  end
end
return out
";

/// Remove what expired before `now` (at most 10,000 keys a run). ARGV: prefix, now. Returns
/// how many records were removed.
const SWEEP: &str = r"
local z = P .. 'expiry'
local gone = 0
for _ = 1, 20 do
  local keys = redis.call('ZRANGEBYSCORE', z, '-inf', '(' .. ARGV[2], 'LIMIT', 0, 500)
  for _, k in ipairs(keys) do
    gone = gone + redis.call('DEL', k)
    redis.call('ZREM', z, k)
  end
  if #keys < 500 then break end
end
return gone
";

/// The scripts, hashed once when the store connects.
pub(super) struct Scripts {
    pub(super) insert_task: Script,
    pub(super) update_task: Script,
    pub(super) touch_tasks: Script,
    pub(super) fail_abandoned: Script,
    pub(super) issue_token: Script,
    pub(super) spend_token: Script,
    pub(super) claim: Script,
    pub(super) settle: Script,
    pub(super) renew: Script,
    pub(super) release: Script,
    pub(super) take_rate: Script,
    pub(super) queue: Script,
    pub(super) take_queued: Script,
    pub(super) put_session: Script,
    pub(super) touch_sessions: Script,
    pub(super) update_session: Script,
    pub(super) delete_session: Script,
    pub(super) append_to_stream: Script,
    pub(super) read_streams: Script,
    pub(super) sweep: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        let script = |body: &str| Script::new(&format!("{PRELUDE}{body}"));
        Self {
            insert_task: script(INSERT_TASK),
            update_task: script(UPDATE_TASK),
            touch_tasks: script(TOUCH_TASKS),
            fail_abandoned: script(FAIL_ABANDONED),
            issue_token: script(ISSUE_TOKEN),
            spend_token: script(SPEND_TOKEN),
            claim: script(CLAIM),
            settle: script(SETTLE),
            renew: script(RENEW),
            release: script(RELEASE),
            take_rate: script(TAKE_RATE),
            queue: script(QUEUE),
            take_queued: script(TAKE_QUEUED),
            put_session: script(PUT_SESSION),
            touch_sessions: script(TOUCH_SESSIONS),
            update_session: script(UPDATE_SESSION),
            delete_session: script(DELETE_SESSION),
            append_to_stream: script(APPEND_TO_STREAM),
            read_streams: script(READ_STREAMS),
            sweep: script(SWEEP),
        }
    }
}
