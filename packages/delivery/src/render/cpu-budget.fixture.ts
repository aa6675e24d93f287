// A child process for payload-template.cpu-budget.test.ts: it renders a template whose cost grows with its event's
// items, so that the test can stop it (SIGSTOP) in the middle of a render. Protocol, one JSON object a line:
// it prints the CPU time (ms) one render takes, then waits for a line with a budget (ms) on stdin, prints
// "started", renders once under that budget and prints the outcome with the render's wall-clock and CPU time.
import { writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { threadCpuMs } from '@gatehook/core/cpu-deadline';
import { parseTemplate } from '@gatehook/templates/template';
import { renderWithTemplate, sampleEvent } from './payload-template';

const items = Number(process.argv[2]);
const template = parseTemplate('template', '{"n": {{len .Payload.items}}, "s": "{{range .Payload.items}}{{if eq (printf "%d-%s" . "ab") "x"}}y{{end}}{{end}}"}');
const event = { ...sampleEvent(['policy.created']), payload: { items: Array.from({ length: items }, (_, i) => i) } };
const line = (value: unknown) => writeSync(1, `${JSON.stringify(value)}\n`);

// Calibration, with a budget it cannot reach; the first render also compiles the code the later ones run.
renderWithTemplate(template, event, {}, { maxDurationMs: 60_000 });
const before = threadCpuMs() ?? 0;
const calibration = renderWithTemplate(template, event, {}, { maxDurationMs: 60_000 });
line({ cpuMs: (threadCpuMs() ?? 0) - before, ok: calibration.ok, error: calibration.ok ? null : calibration.error });

const input = createInterface({ input: process.stdin });
input.once('line', (text) => {
  const budgetMs = Number(text);
  line('started');
  const wallStart = performance.now();
  const cpuStart = threadCpuMs() ?? 0;
  const result = renderWithTemplate(template, event, {}, { maxDurationMs: budgetMs });
  line({ ok: result.ok, error: result.ok ? null : result.error, wallMs: performance.now() - wallStart, cpuMs: (threadCpuMs() ?? 0) - cpuStart });
  input.close();
});
