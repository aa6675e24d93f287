// The receiver process of startReceiverProcess (receiver-process.ts): startReceiver with the parent's test CA,
// answering 200 at once (never, at the hanging paths), and reporting the first arrival of each distinct event id.
// Reports are batched for ARRIVAL_REPORT_MS: one IPC message per request would cost the receiver and the parent
// more CPU than the request itself at thousands of requests a second; the batching delays what the parent knows,
// not the instants it is told.
import { performance } from 'node:perf_hooks';
import { recordFirstArrivals } from './arrivals';
import { startReceiver, type TestReceiver } from './receiver';
import type { ReceiverCommand, ReceiverReport } from './receiver-process';

const ARRIVAL_REPORT_MS = 5;

const seen = new Map<string, number>();
let pending: { ids: string[]; at: number[] } = { ids: [], at: [] };
let flushTimer: NodeJS.Timeout | undefined;
let receiver: TestReceiver | undefined;

/** Sends a report; resolves once it has been handed to the channel (at once when the parent has gone). */
function report(message: ReceiverReport): Promise<void> {
  return new Promise((resolve) => {
    if (process.connected) process.send!(message, undefined, undefined, () => resolve());
    else resolve();
  });
}

function flush(): Promise<void> {
  clearTimeout(flushTimer);
  flushTimer = undefined;
  if (pending.ids.length === 0) return Promise.resolve();
  const batch = pending;
  pending = { ids: [], at: [] };
  return report({ type: 'arrivals', ...batch });
}

async function start(command: Extract<ReceiverCommand, { type: 'start' }>): Promise<void> {
  const hangs = (requestPath: string) => command.hang === true || command.hang.includes(requestPath);
  const started = await startReceiver(
    (request) => {
      // Bodies are not kept: the first arrival of each id is all the parent is told.
      started.requests.length = 0;
      if (hangs(request.path)) return 'hang';
      const at = performance.timeOrigin + performance.now();
      for (const id of recordFirstArrivals(request.body, at, seen)) {
        pending.ids.push(id);
        pending.at.push(at);
      }
      flushTimer ??= setTimeout(() => void flush(), ARRIVAL_REPORT_MS);
      return { status: 200 };
    },
    { pki: command.pki },
  );
  receiver = started;
  await report({ type: 'listening', port: Number(new URL(started.url()).port) });
}

async function close(): Promise<void> {
  await flush();
  await receiver?.close();
  process.exit(0);
}

process.on('message', (command: ReceiverCommand) => {
  if (command.type === 'start') void start(command);
  else void close();
});
// The parent went away without closing it: nothing is left to report to.
process.on('disconnect', () => process.exit(0));
