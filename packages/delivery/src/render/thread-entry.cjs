// Entry file of the render pool's threads (pool.ts). The threads run the delivery package's TypeScript: started
// by `node --import tsx` (the apps) they inherit the loader through execArgv, but under jest, whose transform
// lives inside the test's VM, a thread has none. tsx's scoped require loads thread.ts and everything it imports
// in both cases, without installing a loader for the whole thread.
const tsx = require('tsx/cjs/api');

module.exports = tsx.require('./thread.ts', __filename);
