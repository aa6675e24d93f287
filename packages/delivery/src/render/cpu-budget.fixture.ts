// A child process for payload-template.cpu-budget.test.ts: a render thread (a worker thread, as in the render pool)
// renders a template whose cost grows with its event's items. Protocol, one JSON object a line on stdout: the CPU
// time (ms) one render takes; then, for a budget (ms) read from stdin, "started" and the outcome of one render under
// that budget, with its wall-clock and CPU time. When the line read also gives a pause, the main thread stops the
// whole process (SIGSTOP) that long after the render has started, for the test to continue it (SIGCONT): a render
// kept off the CPU in the middle, whatever the machine is doing, as the main thread's timer fires long before a
// render of a third of a second of CPU ends.
import { writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { threadCpuMs } from '@gatehook/core/cpu-deadline';
import { parseTemplate } from '@gatehook/templates/template';
import { renderWithTemplate, sampleEvent } from './payload-template';

const line = (value: unknown) => writeSync(1, `${JSON.stringify(value)}\n`);

if (isMainThread) {
  // The thread loads this file as the render pool's threads load theirs (thread-entry.cjs).
  const thread = new Worker(
    `require('tsx/cjs/api').require(${JSON.stringify(__filename)}, ${JSON.stringify(__filename)});`,
    { eval: true, argv: process.argv.slice(2) },
  );
  const input = createInterface({ input: process.stdin });
  input.once('line', (text) => {
    const { budgetMs, stopAfterMs } = JSON.parse(text) as { budgetMs: number; stopAfterMs?: number };
    if (stopAfterMs !== undefined)
      thread.once('message', () => setTimeout(() => process.kill(process.pid, 'SIGSTOP'), stopAfterMs));
    thread.postMessage(budgetMs);
    input.close();
  });
} else {
  const items = Number(process.argv[2]);
  const template = parseTemplate(
    'template',
    '{"n": {{len .Payload.items}}, "s": "{{range .Payload.items}}{{if eq (printf "%d-%s" . "ab") "x"}}y{{end}}{{end}}"}',
  );
  const event = { ...sampleEvent(['policy.created']), payload: { items: Array.from({ length: items }, (_, i) => i) } };
  // Calibration, with a budget it cannot reach; the first render also compiles the code the later ones run.
  renderWithTemplate(template, event, {}, { maxDurationMs: 60_000 });
  const before = threadCpuMs() ?? 0;
  const calibration = renderWithTemplate(template, event, {}, { maxDurationMs: 60_000 });
  line({ cpuMs: (threadCpuMs() ?? 0) - before, ok: calibration.ok, error: calibration.ok ? null : calibration.error });
  parentPort!.once('message', (budgetMs: number) => {
    line('started');
    parentPort!.postMessage('started');
    const wallStart = performance.now();
    const cpuStart = threadCpuMs() ?? 0;
    const result = renderWithTemplate(template, event, {}, { maxDurationMs: budgetMs });
    line({
      ok: result.ok,
      error: result.ok ? null : result.error,
      wallMs: performance.now() - wallStart,
      cpuMs: (threadCpuMs() ?? 0) - cpuStart,
    });
    process.exit(0);
  });
}
