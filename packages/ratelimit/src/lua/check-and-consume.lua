--[[
  Check-and-consume over every counter one rate limit check touches, atomically (CONTRACT 8). The same
  algorithm as src/consume.ts; a differential test keeps them in step.

  KEYS[i]   counter hash of the i-th matching rule (variable count). All keys of one call share the
            organisation's hash tag, so they sit in one Redis Cluster slot.
            Fields: s = window start (ms), u = calls used in the window, r = 1 once exceedance was reported.
  ARGV[1]   cost of the call (integer >= 1)
  ARGV[2 + 3(i-1)]  C of counter i (calls per window)
  ARGV[3 + 3(i-1)]  T of counter i (window, ms)
  ARGV[4 + 3(i-1)]  1 when rule i denies, 0 when it only logs

  Time is the server's (TIME), never the caller's clock, so every process sees one clock.

  Returns { now_ms, allowed (1|0), then per counter: remaining, reset_at_ms, exceeded (1|0), first_exceeded (1|0) }
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cost = tonumber(ARGV[1])
local n = #KEYS

local start, used, reported, exceeded = {}, {}, {}, {}
local allowed = 1
for i = 1, n do
  local calls = tonumber(ARGV[3 * i - 1])
  local window = tonumber(ARGV[3 * i])
  local state = redis.call('HMGET', KEYS[i], 's', 'u', 'r')
  local s = tonumber(state[1])
  if s ~= nil and now < s + window then
    start[i], used[i], reported[i] = s, tonumber(state[2]) or 0, state[3] == '1'
  else
    start[i], used[i], reported[i] = now, 0, false
  end
  exceeded[i] = cost > calls - used[i]
  if exceeded[i] and ARGV[3 * i + 1] == '1' then allowed = 0 end
end

local out = { now, allowed }
for i = 1, n do
  local calls = tonumber(ARGV[3 * i - 1])
  local window = tonumber(ARGV[3 * i])
  local write, first = false, 0
  if exceeded[i] then
    if not reported[i] then
      reported[i], write, first = true, true, 1
    end
  elseif allowed == 1 then
    used[i], write = used[i] + cost, true
  end
  if write then
    redis.call('HSET', KEYS[i], 's', start[i], 'u', used[i], 'r', reported[i] and 1 or 0)
    -- An idle counter disappears when its window ends; the next call starts a fresh one anyway.
    redis.call('PEXPIREAT', KEYS[i], start[i] + window)
  end
  out[#out + 1] = math.max(0, calls - used[i])
  out[#out + 1] = start[i] + window
  out[#out + 1] = exceeded[i] and 1 or 0
  out[#out + 1] = first
end
return out
