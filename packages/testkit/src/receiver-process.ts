// An HTTPS receiver in a process of its own, as a webhook's receiver is for the service that sends to it: the
// process that measures does not share its event loop or its CPU time with the receiver. It is startReceiver (the
// test CA's certificate, 200 at once or never), run by receiver-process-main.ts, and reports the first arrival of
// each distinct event id back over IPC.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Pki } from './pki';
import { testCa } from './receiver';

const root = path.resolve(__dirname, '../../..');
/** The longest a receiver process may take to start listening, and to exit once told to close. */
const START_TIMEOUT_MS = 30_000;
const CLOSE_TIMEOUT_MS = 10_000;

/** Which requests the receiver never answers: every one (true) or those at one of the paths given. */
export type HangPaths = true | readonly string[];

/** What the parent tells the receiver process. */
export type ReceiverCommand = { type: 'start'; pki: Pki; hang: HangPaths } | { type: 'close' };

/**
 * What the receiver process tells the parent: its port once it listens, then batches of first arrivals, each at
 * `performance.timeOrigin + performance.now()` of the receiver process (epoch ms, fractional).
 */
export type ReceiverReport = { type: 'listening'; port: number } | { type: 'arrivals'; ids: string[]; at: number[] };

export interface ReceiverProcess {
  /** https://127.0.0.1:<port><path> */
  url(path?: string): string;
  /** The receiver's OS process id (benchmarks read its CPU time from /proc). */
  pid: number;
  /**
   * The first arrival of each distinct event id, as performance.now() of THIS process: the instant the receiver
   * process read the request's body. A report reaches this map a few milliseconds after the arrival it records.
   */
  arrivals: Map<string, number>;
  /** Stops the receiver process; requests it never answered are cut. Safe to call twice. */
  close(): Promise<void>;
}

/** Starts an HTTPS receiver process with a certificate of this process's test CA (testCa()). */
export async function startReceiverProcess(options: { hang?: HangPaths } = {}): Promise<ReceiverProcess> {
  const child = fork(path.join(__dirname, 'receiver-process-main.ts'), [], {
    cwd: root,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  const arrivals = new Map<string, number>();
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`receiver process did not listen within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    child.on('message', (report: ReceiverReport) => {
      if (report.type === 'listening') {
        clearTimeout(timer);
        resolve(report.port);
        return;
      }
      for (let i = 0; i < report.ids.length; i += 1) {
        const id = report.ids[i]!;
        if (!arrivals.has(id)) arrivals.set(id, report.at[i]! - performance.timeOrigin);
      }
    });
    void exited.then(([code, signal]) => {
      clearTimeout(timer);
      reject(new Error(`receiver process exited before it listened (${signal ?? code})`));
    });
    const start: ReceiverCommand = { type: 'start', pki: testCa().pki, hang: options.hang ?? [] };
    child.send(start);
  }).catch(async (error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  let closing: Promise<void> | undefined;
  return {
    url: (p = '/hook') => `https://127.0.0.1:${port}${p}`,
    pid: child.pid!,
    arrivals,
    close() {
      closing ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const timer = setTimeout(() => child.kill('SIGKILL'), CLOSE_TIMEOUT_MS);
        const close: ReceiverCommand = { type: 'close' };
        if (child.connected) child.send(close);
        else child.kill('SIGKILL');
        await exited;
        clearTimeout(timer);
      })();
      return closing;
    },
  };
}
