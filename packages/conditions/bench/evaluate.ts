// Micro-benchmark: evaluations per second of a three-clause webhook condition on a realistic event, the work the
// delivery engine does per event and subscribed webhook. Run: pnpm exec tsx packages/conditions/bench/evaluate.ts [seconds]

import { compileEventCondition, type ConditionEventInput } from '../src/event-condition';

const EXPRESSION = 'event.action.startsWith("anomaly_finding.") && event.payload.severity in ["high", "critical"] && event.payload.score > 0.5';

const event: ConditionEventInput = {
  id: '0b6f3c1e-5d0a-4c8e-9a43-2f7d9b1c0a11',
  org_id: '6a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  action: 'anomaly_finding.created',
  actor_type: 'system',
  actor_id: 'detector-volume',
  actor_display_name: 'Volume detector',
  resource_type: 'anomaly_finding',
  resource_id: 'f-1042',
  resource_display_name: 'Unusual tool volume',
  resources: { agent_slug: 'support-bot', mcp_slug: 'github' },
  context: { ip: '10.1.2.3', country: 'DE', trace_id: 'abc123' },
  changes: [],
  payload: { severity: 'high', score: 0.87, detector: 'volume', subject: 'agent:support-bot' },
  created_at: '2026-03-04T10:20:30.123Z',
};

function main(): void {
  const seconds = Number(process.argv[2] ?? 1);
  const compiled = compileEventCondition(EXPRESSION, ['anomaly_finding.created', 'anomaly_finding.escalated']);
  if (!compiled.ok) throw new Error(compiled.issues.map((i) => i.message).join('; '));
  const condition = compiled.condition;
  const check = condition.evaluate(event);
  if (!check.ok || !check.matches) throw new Error(`benchmark condition does not match: ${JSON.stringify(check)}`);

  // Warm up so that the JIT has compiled the evaluation path before it is measured.
  for (let i = 0; i < 20_000; i++) condition.evaluate(event);

  const batch = 1_000;
  let evaluations = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < batch; i++) condition.evaluate(event);
    evaluations += batch;
  }
  const elapsedMs = performance.now() - started;
  const perSecond = Math.round((evaluations / elapsedMs) * 1000);
  console.log(`conditions/evaluate: ${perSecond.toLocaleString('en-US')} evaluations/s (three clauses, ${evaluations} in ${Math.round(elapsedMs)} ms)`);
}

main();
