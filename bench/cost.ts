// What a unit of work costs the processes that do it: CPU time of the API, the worker(s) and every Postgres
// process (from /proc, so a figure includes what the process does besides the hot path, as a user's load test
// would see it), and the statements the API and workers sent to Postgres (their `gatehook_db_statements_total`,
// one round trip each). Snapshots are taken at the start and the end of a measurement window.
import { readdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { get } from 'node:http';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** User + system CPU ms of process `pid` so far (0 once it has gone). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** CPU ms of every process named `postgres` (postmaster, backends, background workers). */
function postgresCpuMs(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') total += cpuMs(Number(entry));
    } catch {
      // The process ended while the directory was read.
    }
  }
  return total;
}

/** `gatehook_db_statements_total` of the service answering /metrics on `port`. */
async function statements(port: number): Promise<number> {
  // A connection of its own each time: a pooled one may have been closed by the server while the bench was busy.
  const text = await new Promise<string>((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    }).on('error', reject);
  });
  const line = text.split('\n').find((l) => l.startsWith('gatehook_db_statements_total '));
  if (!line) throw new Error(`no gatehook_db_statements_total on port ${port}`);
  return Number(line.split(' ')[1]);
}

export interface Service {
  pid: number;
  port: number;
}

interface Snapshot {
  apiCpu: number;
  workerCpu: number;
  postgresCpu: number;
  apiStatements: number;
  workerStatements: number;
}

/** Per unit of work (a delivery, an event) over one window. */
export interface Cost {
  apiCpuMs: number;
  workerCpuMs: number;
  postgresCpuMs: number;
  apiStatements: number;
  workerStatements: number;
}

async function snapshot(api: Service, workers: readonly Service[]): Promise<Snapshot> {
  const workerStatements = await Promise.all(workers.map((w) => statements(w.port)));
  return {
    apiCpu: cpuMs(api.pid),
    workerCpu: workers.reduce((sum, w) => sum + cpuMs(w.pid), 0),
    postgresCpu: postgresCpuMs(),
    apiStatements: await statements(api.port),
    workerStatements: workerStatements.reduce((a, b) => a + b, 0),
  };
}

/** Starts a window over the API and `workers`; `end(units)` gives the cost per unit of work done in it. */
export async function meter(api: Service, workers: readonly Service[]): Promise<{ end(units: number): Promise<Cost> }> {
  const before = await snapshot(api, workers);
  return {
    async end(units) {
      const after = await snapshot(api, workers);
      const per = (key: keyof Snapshot) => Number(((after[key] - before[key]) / Math.max(1, units)).toFixed(3));
      return { apiCpuMs: per('apiCpu'), workerCpuMs: per('workerCpu'), postgresCpuMs: per('postgresCpu'), apiStatements: per('apiStatements'), workerStatements: per('workerStatements') };
    },
  };
}
