// Payload templates that are cheap on the save-time sample and slow on real data (CONTRACT 15, "CPU" and "API"):
// what a tenant may legitimately write, each render under the budget (docs/limits.md, "Templates"), and what the
// fairness figures load the worker and the API with. How slow is data-dependent, so each is calibrated on this
// machine in this process: the amount of data is chosen so that one render takes about a given time.
//  - per event: a double `range` over a list the event's payload carries, with `json` of a 16 KiB string of the
//    payload inside: n² × 16 KiB of escaping for a list of n, and nothing for the sample event, which has no list;
//  - per test send: a triple `range` over the webhook's n variables with `json` of all of them inside (n⁴ × 4 KiB),
//    only when the event is `webhook.test` (the save-time sample is the first subscribed action, so it never takes
//    that branch).
import type { AuditEventData } from '@gatehook/delivery/render/envelope';
import {
  checkPayloadTemplate,
  renderWithTemplate,
  type TemplateCheck,
} from '@gatehook/delivery/render/payload-template';

type Template = Extract<TemplateCheck, { ok: true }>['template'];

/** Renders `events` by double iteration over `.Payload.items`; cheap (one small object) when the list is absent. */
export const SLOW_EVENT_TEMPLATE =
  '{{range .Payload.items}}{{range $.Payload.items}}{{if json $.Payload.pad}}{{end}}{{end}}{{end}}{"id": {{json .ID}}, "action": {{json .Action}}}';

/** Slow only for the test send's `webhook.test` event, over the webhook's variables. */
export const SLOW_TEST_TEMPLATE =
  '{{if eq .Action "webhook.test"}}{{range .Vars}}{{range $.Vars}}{{range $.Vars}}{{if json $.Vars}}{{end}}{{end}}{{end}}{{end}}{{end}}{"id": {{json .ID}}, "action": {{json .Action}}}';

const PAD = 'x'.repeat(16 * 1024);
/** The step budget (10⁶ nodes, iterations and calls) allows about 550² iterations of the inner body. */
const MAX_ITEMS = 500;
/** Variables of a webhook, and the longest value (docs/webhooks.md "Limits"). */
const MAX_VARS = 50;
const VAR_VALUE = 'v'.repeat(4096);

/** A payload that makes {@link SLOW_EVENT_TEMPLATE} iterate items² times. */
export function slowPayload(items: number): Record<string, unknown> {
  return { items: Array.from({ length: items }, (_, i) => i), pad: PAD };
}

/** `count` variables of the longest value, for {@link SLOW_TEST_TEMPLATE}. */
export function slowVars(count: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`v${i}`, VAR_VALUE]));
}

function compiled(text: string, vars: Record<string, string>, events: readonly string[]): Template {
  const check = checkPayloadTemplate(text, vars, events);
  if (!check.ok) throw new Error(`slow template refused on save: ${check.message}`);
  return check.template;
}

/** The fastest of three renders, in ms. */
function renderMs(template: Template, event: AuditEventData, vars: Record<string, string>): number {
  let best = Infinity;
  for (let i = 0; i < 3; i += 1) {
    const started = performance.now();
    const result = renderWithTemplate(template, event, vars);
    const took = performance.now() - started;
    if (!result.ok) return Infinity;
    best = Math.min(best, took);
  }
  return best;
}

/**
 * The size (n, within 1..max) at which `render(n)` takes about `targetMs`, for a cost that grows as n^power:
 * measured at a small size, scaled, measured again and corrected once.
 */
function calibrate(
  render: (n: number) => number,
  power: number,
  start: number,
  max: number,
  targetMs: number,
): { n: number; ms: number } {
  let n = start;
  let ms = render(n);
  for (let round = 0; round < 2; round += 1) {
    const next = Math.max(1, Math.min(max, Math.floor(n * (targetMs / Math.max(ms, 0.01)) ** (1 / power))));
    if (next === n) break;
    n = next;
    ms = render(n);
  }
  // Past the target (a noisy first measurement): step back until under it.
  while (ms > targetMs * 1.1 && n > 1) {
    n = Math.floor(n * 0.9);
    ms = render(n);
  }
  return { n, ms: Number(ms.toFixed(1)) };
}

/** The list length at which one event of `event`'s shape renders through SLOW_EVENT_TEMPLATE in about `targetMs`. */
export function calibrateSlowEvent(event: AuditEventData, targetMs: number): { items: number; ms: number } {
  const template = compiled(SLOW_EVENT_TEMPLATE, {}, [event.action]);
  const { n, ms } = calibrate(
    (items) => renderMs(template, { ...event, payload: { ...event.payload, ...slowPayload(items) } }, {}),
    2,
    40,
    MAX_ITEMS,
    targetMs,
  );
  return { items: n, ms };
}

/** The number of variables at which a test send through SLOW_TEST_TEMPLATE renders in about `targetMs`. */
export function calibrateSlowTest(event: AuditEventData, targetMs: number): { vars: number; ms: number } {
  const test = { ...event, action: 'webhook.test' };
  const { n, ms } = calibrate(
    (count) => renderMs(compiled(SLOW_TEST_TEMPLATE, slowVars(count), [event.action]), test, slowVars(count)),
    4,
    10,
    MAX_VARS,
    targetMs,
  );
  return { vars: n, ms };
}
