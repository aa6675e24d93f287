// What a unit of work costs the processes that do it: CPU time of the API, the worker(s) and the Postgres
// processes that work for the stack's database (from /proc, so a figure includes what the process does besides
// the hot path, as a user's load test would see it), and the statements the API and workers sent to Postgres
// (their `gatehook_db_statements_total`, one round trip each). Snapshots are taken at the start and the end of a
// measurement window.
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { get } from 'node:http';
import { sqlPool, type Db } from '@gatehook/db/client';

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

/** Postgres's own processes, which work for every database of the server (WAL, checkpoints, dirty buffers). */
const POSTGRES_SERVER_PROCESSES = ['walwriter', 'checkpointer', 'background writer'];

/**
 * CPU ms so far of each Postgres process that works for `db`'s database, by pid: its backends (the service's
 * connections, autovacuum workers, the bench's own) and the server's own processes. Backends of other databases on the
 * same server
 * are left out: on a shared server they come and go (a process that exits takes its CPU time out of any sum over
 * all of them) and their work is not the stack's.
 */
async function postgresCpu(db: Db): Promise<Map<number, number>> {
  const { rows } = await sqlPool(db).query<{ pid: number }>({
    text: 'SELECT pid FROM pg_stat_activity WHERE datname = current_database() OR backend_type = ANY($1::text[])',
    values: [POSTGRES_SERVER_PROCESSES],
  });
  return new Map(rows.map(({ pid }) => [pid, cpuMs(pid)]));
}

/** CPU ms the processes of `after` used since `before`; a process that started meanwhile counts from its start. */
function postgresCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
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
    apiStatements: await statements(api.port),
    workerStatements: workerStatements.reduce((a, b) => a + b, 0),
  };
}

/**
 * Starts a window over the API, `workers` and the Postgres processes of `db`'s database; `end(units)` gives the
 * cost per unit of work done in it.
 */
export async function meter(
  api: Service,
  workers: readonly Service[],
  db: Db,
): Promise<{ end(units: number): Promise<Cost> }> {
  const before = await snapshot(api, workers);
  const postgresBefore = await postgresCpu(db);
  return {
    async end(units) {
      const postgresAfter = await postgresCpu(db);
      const after = await snapshot(api, workers);
      const perUnit = (total: number) => Number((total / Math.max(1, units)).toFixed(3));
      const per = (key: keyof Snapshot) => perUnit(after[key] - before[key]);
      return {
        apiCpuMs: per('apiCpu'),
        workerCpuMs: per('workerCpu'),
        postgresCpuMs: perUnit(postgresCpuBetween(postgresBefore, postgresAfter)),
        apiStatements: per('apiStatements'),
        workerStatements: per('workerStatements'),
      };
    },
  };
}
