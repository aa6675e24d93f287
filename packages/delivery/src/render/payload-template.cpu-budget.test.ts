import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { threadCpuMs, WALL_CAP_FACTOR } from '@gatehook/core/cpu-deadline';
import { until } from '@gatehook/testkit/until';

/**
 * A render's time budget is the CPU time of the thread that renders (core/cpu-deadline.ts): a thread kept off the
 * CPU by the rest of the machine is not stopped at its budget of wall-clock time. The test makes such a machine by
 * having a child process stop itself (SIGSTOP) in the middle of a render, and continuing it after `stopOfBudget`
 * budgets (0: no stop).
 */
async function renderStopped(items: number, budgetOfCalibration: number, stopOfBudget: number) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, 'cpu-budget.fixture.ts'), String(items)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async () => JSON.parse((await lines.next()).value as string) as Record<string, unknown>;
  try {
    const calibration = await next();
    expect(calibration.ok).toBe(true);
    const budgetMs = Math.max(50, Math.round((calibration.cpuMs as number) * budgetOfCalibration));
    child.stdin!.write(`${JSON.stringify({ budgetMs, ...(stopOfBudget > 0 ? { stopAfterMs: 20 } : {}) })}\n`);
    expect(await next()).toBe('started');
    if (stopOfBudget > 0) {
      await until(
        async () => processState(child.pid!),
        (state) => state === 'T',
        30_000,
      );
      await sleep(budgetMs * stopOfBudget);
      child.kill('SIGCONT');
    }
    const outcome = await next();
    return { budgetMs, calibrationCpuMs: calibration.cpuMs as number, outcome };
  } finally {
    child.kill('SIGKILL');
  }
}

/** A process's state letter from /proc (T: stopped). */
function processState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}

const counted = threadCpuMs() !== undefined;
/** The event's items: a render of about a third of a second here, far longer than the test takes to stop it. */
const ITEMS = 150_000;

describe('the render budget counts the rendering thread’s CPU time', () => {
  (counted ? it : it.skip)(
    'a render stopped for longer than its budget still renders when its own CPU time is within it',
    async () => {
      // A budget of three times what the render costs; stopped for 1.5 budgets: its wall-clock time is well past its
      // budget, its CPU time a third of it, and far from the cap of WALL_CAP_FACTOR budgets.
      const { budgetMs, outcome } = await renderStopped(ITEMS, 3, 1.5);
      expect(outcome.wallMs).toBeGreaterThan(budgetMs);
      expect(outcome.wallMs).toBeLessThan(budgetMs * WALL_CAP_FACTOR);
      expect(outcome).toMatchObject({ ok: true, error: null });
    },
  );

  (counted ? it : it.skip)('a render whose CPU time is over its budget still stops there', async () => {
    const { budgetMs, calibrationCpuMs, outcome } = await renderStopped(ITEMS, 0.2, 0);
    expect(calibrationCpuMs).toBeGreaterThan(budgetMs * 2);
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatch(/execution stopped after \d+ ms/);
    expect(outcome.cpuMs).toBeLessThan(calibrationCpuMs);
  });
});
