--[[
  Takes a request's turn at a webhook limited to a number of requests per second (CONTRACT 18), on the Redis
  server's clock so that every worker shares one schedule. GCRA with no burst tolerance: a turn is granted only when
  the theoretical arrival time (TAT) has come, and each grant moves it one interval on, so granted turns are at least
  one interval apart and any one-second window holds at most `rate` of them.

  A request turned away is told when to come back: after the requests already turned away (the `queue` horizon moves
  one interval on for each), so a backlog comes back spread over its turns instead of all at once at the next one.
  That time is a hint, not a reservation: the returning request takes a turn like any other. A request whose turn
  comes within ARGV[2] waits for it in place and asks again: it is told the wait without joining the line.

  KEYS[1]  the webhook's pace hash (fields `tat`, `queue`, microseconds), hash-tagged by organisation
  ARGV[1]  interval between turns in microseconds (ceil(1e6 / rate))
  ARGV[2]  longest wait, in microseconds, the caller spends in place rather than in the line

  Returns  {1, 0, now} when the turn is granted; {0, wait, now} when not, `wait` the microseconds until it should
           come back; `now` is the server's clock in microseconds.
]]
local interval = tonumber(ARGV[1])
local inPlace = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local state = redis.call('HMGET', KEYS[1], 'tat', 'queue')
local tat = tonumber(state[1]) or 0
local queue = tonumber(state[2]) or 0

if tat <= now then
  tat = now + interval
  redis.call('HSET', KEYS[1], 'tat', tat)
  redis.call('PEXPIRE', KEYS[1], math.ceil((math.max(tat, queue) - now) / 1000) + 1000)
  return {1, 0, now}
end

if tat - now <= inPlace then
  return {0, tat - now, now}
end

local turn = math.max(queue, tat)
queue = turn + interval
redis.call('HSET', KEYS[1], 'queue', queue)
redis.call('PEXPIRE', KEYS[1], math.ceil((queue - now) / 1000) + 1000)
return {0, turn - now, now}
