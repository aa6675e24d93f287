--[[
  Readiness round trip through one queue's slot (CONTRACT 16): writes, reads back and deletes a key under the
  queue's hash tag, so it proves that the master serving that slot takes writes and runs scripts, and that the
  client routes to it (a cluster client follows MOVED there itself).

  KEYS[1]   `<queue prefix>:<queue name>:readyz`, e.g. `{gatehook:deliver:3}:deliver:readyz`
  ARGV[1]   a token of this probe

  Returns the token read back.
]]
redis.call('SET', KEYS[1], ARGV[1], 'PX', 10000)
local token = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[1])
return token
