// A stand-in for the render thread in FairPool's tests: plain JavaScript, busy for as long as a task says.
const { threadId } = require('node:worker_threads');

exports.busy = ({ ms, label }) => {
  const startedAt = Date.now();
  while (Date.now() < startedAt + ms);
  return { label, threadId, startedAt, endedAt: Date.now() };
};

// A task that never yields and checks no clock, as a bug in a render would: only terminating its thread stops it.
exports.spin = () => {
  for (;;);
};
