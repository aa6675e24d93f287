// Fair sharing of the worker and the API (CONTRACT 15), measured from outside at the defaults: what one
// organisation does to another's latency, each next to the same latency without it, in the same run. Org B sends
// single events at a low rate to a plain webhook; its ingest → receiver latency is measured
//  1. while org A sends events steadily whose template is cheap on the save-time sample and slow on them
//     (bench/slow-templates.ts: each render calibrated to well under the 1 s budget here);
//  2. while org A sends events steadily to six webhooks whose six receivers (six origins) accept the connection
//     and never answer, over a window past the default timeout and the first retry.
//  3. while org L, whose 1,000 webhooks subscribe to other actions but one, sends events steadily: what a large
//     organisation's configuration costs the worker on every fan-out; then while L's admin also renames one of
//     them 20 times a second, each change making every process reload L's configuration.
// And the API's own /healthz latency (p99 and max) while clients call POST /webhooks/preview with a slow template
// over many events and POST /webhooks/{id}/test of a stored template slow on the test event, each client with a
// key of its own at a rate under the management API throttle (CONTRACT 14: 50/s per key by default).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { SecretBox } from '@gatehook/core/encryption';
import { maskUrl } from '@gatehook/core/masking';
import type { ServiceProcess } from '@gatehook/testkit/processes';
import { cpuMs } from './cost';
import {
  ACTION,
  arrivalLatencies,
  DEFAULT_TIMEOUT_MS,
  EVENT,
  figure,
  hangWindowSeconds,
  missingNote,
  ms,
  withRig,
  type Latencies,
  type Rig,
} from './delivery';
import { SAMPLE_EVENT } from './expressions';
import { percentile, type Figure } from './measure';
import { load } from './ratelimit';
import {
  calibrateSlowEvent,
  calibrateSlowTest,
  SLOW_EVENT_TEMPLATE,
  SLOW_TEST_TEMPLATE,
  slowPayload,
  slowVars,
} from './slow-templates';

/** Org B's single events per second, and the least time its latency is measured (so p99 is over 100 events). */
const B_RATE = 10;
const B_SECONDS = 10;
/** Seconds at B's rate before each measured window (JIT and connections; the same with and without A). */
const B_WARMUP_SECONDS = 2;
/** The bar of both worker figures: what B may gain. */
const GAIN_BAR_MS = 250;
/** Org A's events/s with a slow template, and the render time each event is calibrated to (budget: 1 s). */
const SLOW_RATE = 2;
const SLOW_RENDER_MS = 600;
/** Org A's webhooks (each its own receiver, never answering) and the events/s it sends to all of them. */
const HANGING_ORIGINS = 6;
const HANGING_RATE = 10;
/** Org L's webhooks, how many of them subscribe to the action it sends, and its events/s. */
const LARGE_WEBHOOKS = 1000;
const LARGE_RATE = 100;
/** Edits per second L's admin makes to one of its webhooks meanwhile (each makes every process reload L). */
const LARGE_EDIT_RATE = 20;
/** What L's other webhooks subscribe to: actions of the catalogue other than the one it sends. */
const OTHER_ACTIONS = [
  'gateway.tool.called',
  'gateway.tool.denied',
  'policy.updated',
  'policy.deleted',
  'tag.created',
].filter((action) => action !== ACTION);
/** /healthz probes per second, and the least time they are measured. */
const HEALTH_RATE = 50;
const HEALTH_SECONDS = 5;
/** Previews per second, events in each and the render time of each event (the save-time budget is 250 ms). */
const PREVIEW_RATE = 1;
const PREVIEW_EVENTS = 10;
const PREVIEW_RENDER_MS = 200;
/** Test sends per second and the render time of the test event (the delivery budget is 1 s). */
const TEST_RATE = 1;
const TEST_RENDER_MS = 500;

/** Calls `fire` `rate` times a second on schedule until stopped; `stop` resolves once every call has, to the counts. */
function steadyLoad(rate: number, fire: () => Promise<unknown>): { stop(): Promise<{ sent: number; failed: number }> } {
  let running = true;
  const calls: Promise<number>[] = [];
  const loop = (async () => {
    const started = performance.now();
    for (let i = 0; running; i += 1) {
      const wait = started + (i * 1000) / rate - performance.now();
      if (wait > 1) await sleep(wait);
      if (running)
        calls.push(
          fire().then(
            () => 0,
            () => 1,
          ),
        );
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      const failed = (await Promise.all(calls)).reduce((a, b) => a + b, 0);
      return { sent: calls.length, failed };
    },
  };
}

/**
 * Org B's ingest → receiver latencies (ms, ascending) over `seconds`; `fromNow` skips the warm-up, so the window starts
 * with A's load.
 */
type MeasureB = (seconds: number, fromNow?: boolean) => Promise<Latencies>;

/** B's p50 and p99 with and without a load, as figures with the gain in a note. */
function gainFigures(name: (p: number) => string, quiet: Latencies, busy: Latencies, note: string): Figure[] {
  return [50, 99].map((p) => {
    const value = ms(percentile(busy, p));
    const reference = ms(percentile(quiet, p));
    return {
      ...figure(name(p), value, 'ms', `org B's p${p} without org A's load, same run`, reference),
      note: `gain ${ms(value - reference)} ms; ${note}${missingNote(busy)}`,
    };
  });
}

/**
 * What became of org A's events so far, from the database: its deliveries by status, and its webhook's status (a
 * webhook whose every render fails is disabled, which would end A's load early: the note must show it).
 */
async function outcomeOf(rig: Rig, orgId: string, webhookId: string): Promise<string> {
  const byStatus = await rig.db.delivery.groupBy({ by: ['status'], where: { orgId }, _count: true });
  const webhook = await rig.db.webhook.findUnique({
    where: { id: webhookId },
    select: { status: true, disabledReason: true },
  });
  const deliveries = byStatus.map((row) => `${row._count} ${row.status}`).join(', ') || 'none';
  return `A's deliveries: ${deliveries}; its webhook ${webhook?.status ?? 'gone'}${webhook?.disabledReason ? ` (${webhook.disabledReason})` : ''}`;
}

/** Figure 1: org A's slow templates. */
async function slowTemplateFigures(rig: Rig, measureB: MeasureB, seconds: number): Promise<Figure[]> {
  const { items, ms: renderMs } = calibrateSlowEvent(SAMPLE_EVENT, SLOW_RENDER_MS);
  const slowEvent = { ...EVENT, payload: { ...EVENT.payload, ...slowPayload(items) } };
  const window = Math.max(seconds, B_SECONDS);
  const quiet = await measureB(window);
  const a = await rig.org();
  const aReceiver = await rig.receiver();
  const hook = await a.webhook(aReceiver.url('/slow'), { template: SLOW_EVENT_TEMPLATE });
  const aLoad = steadyLoad(SLOW_RATE, () => a.ingest(1, slowEvent));
  const busy = await measureB(window);
  const a1 = await aLoad.stop();
  const outcome = await outcomeOf(rig, a.orgId, hook.id);
  await a.remove(hook.id);
  return gainFigures(
    (p) =>
      `org B's ingest → receiver p${p} at ${B_RATE} single events/s while org A sends ${SLOW_RATE} events/s whose template renders each in about ${SLOW_RENDER_MS} ms (data-dependent; 1 s budget; 1 worker; bar: B gains ≤ ${GAIN_BAR_MS} ms; lower is better)`,
    quiet,
    busy,
    `A's render here ${renderMs} ms (${items} items); A sent ${a1.sent} (${a1.failed} refused); at the end of B's window ${outcome}`,
  );
}

/** Figure 2: org A's six origins that never answer. */
async function hangingOriginFigures(rig: Rig, measureB: MeasureB, seconds: number): Promise<Figure[]> {
  const quiet = await measureB(Math.max(seconds, B_SECONDS));
  const a = await rig.org();
  const receivers = await Promise.all(Array.from({ length: HANGING_ORIGINS }, () => rig.receiver(true)));
  const hooks: string[] = [];
  for (const r of receivers) hooks.push((await a.webhook(r.url('/never'))).id);
  const aLoad = steadyLoad(HANGING_RATE, () => a.ingest(1));
  const busy = await measureB(hangWindowSeconds(seconds), true);
  const a2 = await aLoad.stop();
  for (const id of hooks) await a.remove(id);
  // The requests they hold are cut now rather than at the timeout.
  await Promise.all(receivers.map((r) => r.close()));
  return gainFigures(
    (p) =>
      `org B's ingest → receiver p${p} at ${B_RATE} single events/s while org A sends ${HANGING_RATE} events/s to ${HANGING_ORIGINS} webhooks whose ${HANGING_ORIGINS} receivers never answer (default ${DEFAULT_TIMEOUT_MS / 1000} s timeout; 1 worker; bar: B gains ≤ ${GAIN_BAR_MS} ms; lower is better)`,
    quiet,
    busy,
    `over the ${hangWindowSeconds(seconds)} s from A's first event; A sent ${a2.sent} (${a2.failed} refused)`,
  );
}

/**
 * Writes `count` webhooks of `orgId`, one path of `url` each, straight into the database, each subscribed to one of
 * OTHER_ACTIONS, with every secret encrypted as the API would (so each worker opens them as it opens any): creating
 * them through the API at its defaults would take the management throttle's 20 s.
 */
async function seedWebhooks(rig: Rig, orgId: string, url: (path: string) => string, count: number): Promise<void> {
  const box = new SecretBox(rig.encryptionKey);
  const now = new Date();
  const data = Array.from({ length: count }, (_, i) => {
    const id = randomUUID();
    const target = url(`/other-${i}`);
    return {
      id,
      orgId,
      name: `other ${i}`,
      events: [OTHER_ACTIONS[i % OTHER_ACTIONS.length]!],
      varNames: [],
      headerNames: [],
      urlEncrypted: box.encrypt(target, { column: 'webhooks.url_encrypted', row: id }),
      urlMask: maskUrl(target),
      secretEncrypted: box.encrypt(`whsec_${Buffer.from(id).toString('base64')}`, {
        column: 'webhooks.secret_encrypted',
        row: id,
      }),
      activeSince: now,
      createdAt: now,
    };
  });
  for (let i = 0; i < data.length; i += 250) await rig.db.webhook.createMany({ data: data.slice(i, i + 250) });
}

/** Figure 3: org L, 1,000 webhooks of which one subscribes to what it sends; then with its admin's edits. */
async function largeOrgFigures(
  rig: Rig,
  worker: ServiceProcess,
  measureB: MeasureB,
  seconds: number,
): Promise<Figure[]> {
  const window = Math.max(seconds, B_SECONDS);
  const quiet = await measureB(window);
  const l = await rig.org();
  const receiver = await rig.receiver();
  await seedWebhooks(rig, l.orgId, receiver.url, LARGE_WEBHOOKS - 1);
  // Created through the API last: its change makes every process reload L's webhooks, the seeded ones with it.
  const hook = await l.webhook(receiver.url('/large'));
  const lLoad = steadyLoad(LARGE_RATE, () => l.ingest(1));
  let cpuBefore = cpuMs(worker.pid);
  const busy = await measureB(window);
  let workerCpu = cpuMs(worker.pid) - cpuBefore;
  let delivered = await rig.db.delivery.count({ where: { orgId: l.orgId, webhookId: hook.id } });
  const alone = `${delivered} deliveries to L's subscribed webhook by the end of B's window; the worker's CPU over it ${(workerCpu / Math.max(1, delivered)).toFixed(2)} ms per event of L (B's included); L's other webhooks written to the database, not through the API`;

  // Then L's admin renames its subscribed webhook LARGE_EDIT_RATE times a second, under the management throttle.
  let edit = 0;
  const rename = async () => {
    const response = await fetch(`${rig.api}/webhooks/${hook.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${l.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `large ${(edit += 1)}` }),
    });
    if (!response.ok) throw new Error(`PATCH: ${response.status}`);
  };
  cpuBefore = cpuMs(worker.pid);
  const eventsBefore = delivered;
  const edits = steadyLoad(LARGE_EDIT_RATE, rename);
  const edited = await measureB(window);
  const renamed = await edits.stop();
  workerCpu = cpuMs(worker.pid) - cpuBefore;
  const sent = await lLoad.stop();
  delivered = await rig.db.delivery.count({ where: { orgId: l.orgId, webhookId: hook.id } });
  await rig.db.webhook.deleteMany({ where: { orgId: l.orgId } });
  const large = `org L, with ${LARGE_WEBHOOKS.toLocaleString('en-US')} webhooks of which 1 subscribes to what it sends, sends ${LARGE_RATE} events/s`;
  return [
    ...gainFigures(
      (p) =>
        `org B's ingest → receiver p${p} at ${B_RATE} single events/s while ${large} (1 worker; bar: B gains ≤ ${GAIN_BAR_MS} ms; lower is better)`,
      quiet,
      busy,
      alone,
    ),
    ...gainFigures(
      (p) =>
        `org B's ingest → receiver p${p} at ${B_RATE} single events/s while ${large} and its admin renames one of them ${LARGE_EDIT_RATE} times a second (1 worker; bar: B gains ≤ ${GAIN_BAR_MS} ms; lower is better)`,
      quiet,
      edited,
      `${renamed.sent} renames (${renamed.failed} refused) in B's window; L sent ${sent.sent} events in both windows (${sent.failed} refused); the worker's CPU over this window ${(workerCpu / Math.max(1, delivered - eventsBefore)).toFixed(2)} ms per event of L (B's and the reloads included)`,
    ),
  ];
}

/** Figure 4: /healthz during preview and test-send abuse. */
async function healthzFigures(rig: Rig, seconds: number): Promise<Figure[]> {
  const window = Math.max(seconds, HEALTH_SECONDS);
  const health = {
    url: `${rig.api}/healthz`,
    method: 'GET',
    headers: {},
    mode: 'open',
    rate: HEALTH_RATE,
    seconds: window,
  };
  const calm = await load({ ...health, warmupSeconds: 1 });

  const { items, ms: previewMs } = calibrateSlowEvent(SAMPLE_EVENT, PREVIEW_RENDER_MS);
  const { vars, ms: testMs } = calibrateSlowTest(SAMPLE_EVENT, TEST_RENDER_MS);
  const previewer = await rig.org();
  const tester = await rig.org();
  const testReceiver = await rig.receiver();
  const hook = await tester.webhook(testReceiver.url('/test'), { template: SLOW_TEST_TEMPLATE, vars: slowVars(vars) });
  const previewEvent = { ...EVENT, payload: { ...EVENT.payload, ...slowPayload(items) } };
  const previewBody = JSON.stringify({
    template: SLOW_EVENT_TEMPLATE,
    format: 'single',
    max_events: 1,
    vars: {},
    events: Array.from({ length: PREVIEW_EVENTS }, () => previewEvent),
  });
  const abuse = (key: string) => ({
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    mode: 'open',
    seconds: window + 2,
  });
  // Each abusing client waits for every answer it asked for, so the API has caught up when both have finished.
  const previews = load(
    { ...abuse(previewer.key), url: `${rig.api}/webhooks/preview`, bodies: [previewBody], rate: PREVIEW_RATE },
    { tolerateErrors: true },
  );
  const tests = load(
    { ...abuse(tester.key), url: `${rig.api}/webhooks/${hook.id}/test`, bodies: ['{}'], rate: TEST_RATE },
    { tolerateErrors: true },
  );
  // Their failure is reported by the Promise.all below, not as an unhandled rejection meanwhile.
  previews.catch(() => undefined);
  tests.catch(() => undefined);
  await sleep(1000);
  const abused = await load(health);
  const [p, t] = await Promise.all([previews, tests]);
  const name = (stat: string) =>
    `API GET /healthz ${stat} at ${HEALTH_RATE} req/s while clients call POST /webhooks/preview (${PREVIEW_RATE}/s, ${PREVIEW_EVENTS} events each about ${PREVIEW_RENDER_MS} ms of data-dependent template) and POST /webhooks/{id}/test (${TEST_RATE}/s, a stored template about ${TEST_RENDER_MS} ms on the test event), each client its own key under the 50/s throttle (bar: within ${GAIN_BAR_MS} ms of without; lower is better)`;
  const note = `renders here: preview ${previewMs} ms an event (${items} items), test ${testMs} ms (${vars} variables); ${p.requests} previews (${p.errors} not 200, p99 ${p.latenciesMs.p99} ms), ${t.requests} test sends (p99 ${t.latenciesMs.p99} ms)`;
  return [
    {
      ...figure(
        name('p99'),
        abused.latenciesMs.p99,
        'ms',
        `GET /healthz p99 at ${HEALTH_RATE} req/s without them, same run`,
        calm.latenciesMs.p99,
      ),
      note,
    },
    {
      ...figure(
        name('max'),
        abused.latenciesMs.max,
        'ms',
        `GET /healthz max at ${HEALTH_RATE} req/s without them, same run`,
        calm.latenciesMs.max,
      ),
      note,
    },
  ];
}

/** Every fairness figure; one stack (API and 1 worker at their defaults), torn down at the end whatever happens. */
export async function fairnessFigures(seconds: number): Promise<Figure[]> {
  return withRig(async (rig) => {
    const worker = await rig.startWorker();
    const b = await rig.org();
    const bReceiver = await rig.receiver();
    await b.webhook(bReceiver.url('/b'));
    // With an endpoint that never answers in the picture, B's events may take up to the timeout and more.
    const measureB: MeasureB = (window, fromNow = false) =>
      arrivalLatencies([bReceiver], B_RATE, window, () => b.ingest(1), {
        warmupSeconds: fromNow ? 0 : B_WARMUP_SECONDS,
        settleMs: 2 * DEFAULT_TIMEOUT_MS,
      });
    return [
      ...(await slowTemplateFigures(rig, measureB, seconds)),
      ...(await hangingOriginFigures(rig, measureB, seconds)),
      ...(await largeOrgFigures(rig, worker, measureB, seconds)),
      ...(await healthzFigures(rig, seconds)),
    ];
  });
}
