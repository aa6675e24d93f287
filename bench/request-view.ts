// The operator's request view under a hostile tenant (CONTRACT 17): the API's /healthz latency (p99 and max) while
// one organisation requests the request view (GET /webhooks/{id}/deliveries/{delivery_id}/request) of its worst
// deliveries over and over: a webhook with 50 variables and 50 custom header values of 4,096 characters (the
// limits; one variable is line breaks between two characters), and deliveries whose 400 KB bodies print every one
// of those values, JSON-escaped, a few next to text that nearly matches them. Each view decrypts the body, signs it and
// searches it for every value in every escaping. The reference is /healthz at the same rate without the views, in
// the same run. The deliveries are written straight into the database, sealed as the worker seals bodies.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { SecretBox } from '@gatehook/core/encryption';
import { secretsVersionOf } from '@gatehook/delivery/render/secrets-version';
import { sealBody } from '@gatehook/delivery/render/stored-body';
import { figure, withRig, type Rig } from './delivery';
import type { Figure } from './measure';
import { load } from './ratelimit';

/** /healthz probes per second, and the least time they are measured. */
const HEALTH_RATE = 50;
const HEALTH_SECONDS = 10;
/** Request views per second the tenant asks for (under the management throttle of 50/s per key). */
const VIEW_RATE = 5;
/** Deliveries viewed in turn. */
const DELIVERIES = 5;
/** The webhook's values: as many and as long as a webhook may hold (docs/webhooks.md, "Limits"). */
const VARS = 50;
const HEADERS = 50;
const VALUE_LENGTH = 4096;
/** The body of each delivery, at least this long. */
const BODY_LENGTH = 400_000;
/** The bar: /healthz p99 within this while the views run. */
const HEALTHZ_BAR_MS = 250;

/** A value of `VALUE_LENGTH` characters, distinct per index, of characters JSON escapes and characters it does not. */
function value(i: number): string {
  if (i === 0) return `x${'\n'.repeat(40)}y`.padEnd(VALUE_LENGTH, 'z');
  return `${i}:"<é>"\\`.padEnd(VALUE_LENGTH, 'abcdefghijklmnopqrstuvwxyz'[i % 26]!);
}

/** Values printed next to a near miss of themselves (all but their last character). */
const NEAR_MISSES = 5;

/** The worst body: every value JSON-escaped, a few next to a near miss, padded out to BODY_LENGTH. */
function worstBody(values: readonly string[]): string {
  const events = values.map((v, i): Record<string, string> =>
    i < NEAR_MISSES ? { id: String(i), value: v, near: v.slice(0, -1) } : { id: String(i), value: v },
  );
  let body = JSON.stringify(events);
  if (body.length < BODY_LENGTH)
    body = JSON.stringify([...events, { filler: 'é\\n"'.repeat(Math.ceil((BODY_LENGTH - body.length) / 4)) }]);
  return body;
}

async function seed(rig: Rig): Promise<{ key: string; paths: string[]; bodyLength: number }> {
  const org = await rig.org();
  const receiver = await rig.receiver();
  const vars = Object.fromEntries(Array.from({ length: VARS }, (_, i) => [`V${i}`, value(i)]));
  const headers = Object.fromEntries(
    Array.from({ length: HEADERS }, (_, i) => [`X-H${i}`, value(VARS + i).replace(/[^\t\x20-\x7e]/g, '.')]),
  );
  const hook = await org.webhook(receiver.url('/view'), { vars, headers });
  const row = await rig.db.webhook.findUniqueOrThrow({ where: { id: hook.id } });
  const box = new SecretBox(rig.encryptionKey);
  const body = worstBody([...Object.values(vars), ...Object.values(headers)]);
  const paths: string[] = [];
  for (let i = 0; i < DELIVERIES; i += 1) {
    const id = randomUUID();
    await rig.db.delivery.create({
      data: {
        id,
        orgId: org.orgId,
        webhookId: hook.id,
        status: 'succeeded',
        eventIds: [randomUUID()],
        eventCount: 1,
        bodyEncrypted: sealBody(box, body, id, row),
        contentType: 'application/json',
        secretsVersion: secretsVersionOf(row),
        attemptCount: 1,
      },
    });
    await rig.db.deliveryAttempt.create({
      data: { deliveryId: id, webhookId: hook.id, at: new Date(), statusCode: 200, durationMs: 5 },
    });
    paths.push(`/webhooks/${hook.id}/deliveries/${id}/request`);
  }
  // One view, checked: every value is redacted (the bench measures the real work, not an error path).
  const first = await fetch(`${rig.api}${paths[0]}`, { headers: { authorization: `Bearer ${org.key}` } });
  const shown = (await first.json()) as { body: string };
  if (
    first.status !== 200 ||
    shown.body.includes(JSON.stringify(value(1)).slice(1, -1)) ||
    !shown.body.includes('[redacted]')
  )
    throw new Error(`request view not redacted: ${first.status}`);
  return { key: org.key, paths, bodyLength: body.length };
}

/** /healthz p99 and max while one tenant requests views of its worst deliveries, next to without. */
export async function requestViewFigures(seconds: number): Promise<Figure[]> {
  return withRig(async (rig) => {
    const window = Math.max(seconds, HEALTH_SECONDS);
    const { key, paths, bodyLength } = await seed(rig);
    const health = {
      url: `${rig.api}/healthz`,
      method: 'GET',
      headers: {},
      mode: 'open',
      rate: HEALTH_RATE,
      seconds: window,
    };
    const calm = await load({ ...health, warmupSeconds: 1 });
    const views = load(
      {
        url: `${rig.api}${paths[0]}`,
        paths,
        method: 'GET',
        headers: { authorization: `Bearer ${key}` },
        mode: 'open',
        rate: VIEW_RATE,
        seconds: window + 2,
      },
      { tolerateErrors: true },
    );
    views.catch(() => undefined);
    await sleep(1000);
    const abused = await load(health);
    const v = await views;
    const name = (stat: string) =>
      `API GET /healthz ${stat} at ${HEALTH_RATE} req/s while one tenant requests ${VIEW_RATE} request views/s of deliveries with ${VARS} variables and ${HEADERS} header values of ${VALUE_LENGTH.toLocaleString('en-US')} characters and a ${Math.round(bodyLength / 1000)} KB body printing them all (bar: p99 ≤ ${HEALTHZ_BAR_MS} ms; lower is better)`;
    const note = `${v.requests} views (${v.errors} not 200), view p50 ${v.latenciesMs.p50} ms, p99 ${v.latenciesMs.p99} ms`;
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
  });
}
