import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { auditEvent, startStack, type Stack } from '@gatehook/testkit/stack';
import { axeViolations, ensureConsoleBuilt, launch, SCREENSHOTS, signedInPage } from './browser';

// The operator's view in Chromium (CONTRACT 17): a webhook's hourly chart, and a delivery's request as sent.
jest.setTimeout(60_000);

const TOKEN = 'sk_live_"quoted"\\<b>&ünï\n';
const API_KEY = 'k3y-<&>-"é"';
const HOUR = 3_600_000;

let stack: Stack;
let browser: Browser;
let page: Page;
let webhookId = '';
const offOrigin: string[] = [];

beforeAll(async () => {
  ensureConsoleBuilt();
  browser = await launch();
  stack = await startStack();
  const receiver = await stack.receiver();
  const created = await stack.api.call('POST', '/webhooks', {
    key: stack.org.admin,
    body: {
      name: 'Incident channel',
      url: receiver.url('/hooks/incidents'),
      events: ['*'],
      template:
        '{"text": {{ printf "%s by %s" .String .ActorDisplayName | json }}, "token": {{ json .Vars.TOKEN }}, "id": {{ json .ID }}}',
      vars: { TOKEN },
      headers: { 'X-Api-Key': API_KEY },
    },
  });
  expect(created.status).toBe(201);
  webhookId = created.body.id;
  // History for the chart: deliveries over the last day, written directly, each with its attempts.
  const thisHour = Math.floor(Date.now() / HOUR) * HOUR;
  for (let h = 1; h < 24; h++) {
    const count = 3 + ((h * 7) % 11);
    for (let i = 0; i < count; i++) {
      const id = randomUUID();
      const failed = (h + i) % 9 === 0;
      const createdAt = new Date(thisHour - h * HOUR + i * 60_000);
      await stack.api.db.delivery.create({
        data: {
          id,
          orgId: stack.org.orgId,
          webhookId,
          status: failed ? 'failed' : 'succeeded',
          eventIds: [randomUUID()],
          eventCount: 1,
          attemptCount: failed ? 3 : 1,
          createdAt,
        },
      });
      for (let a = 0; a < (failed ? 3 : 1); a++) {
        await stack.api.db.deliveryAttempt.create({
          data: {
            deliveryId: id,
            webhookId,
            at: new Date(createdAt.getTime() + a * 1000),
            statusCode: failed ? 500 : 200,
            error: failed ? 'http_500' : '',
            durationMs: 20 + ((h * 13 + i * 7) % 180),
          },
        });
      }
    }
  }
  // And live deliveries through the engine: one rendered with the variable and header values in it.
  await stack.settle(await stack.ingest([auditEvent({ actor_display_name: `Ada (${API_KEY})` })]));

  page = await signedInPage(browser, stack, {
    timeoutMs: 10_000,
    watch: (p) =>
      p.on('request', (r) => {
        if (!r.url().startsWith(stack.api.baseUrl) && !r.url().startsWith('data:')) offOrigin.push(r.url());
      }),
  });
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

it("charts the webhook's deliveries per hour from GET /webhooks/{id}/stats", async () => {
  await page.getByRole('link', { name: 'Incident channel', exact: true }).click();
  const stats = page.getByRole('region', { name: 'Hourly statistics' });
  await stats.locator('canvas').first().waitFor();
  const api = await stack.api.call('GET', `/webhooks/${webhookId}/stats`, { key: stack.org.admin });
  const sum = (key: string) => api.body.buckets.reduce((s: number, b: Record<string, number>) => s + b[key]!, 0);
  expect(sum('deliveries')).toBeGreaterThan(100);
  await stats
    .getByTestId('stats-totals')
    .filter({
      hasText: `${sum('deliveries')} deliveries · ${sum('succeeded')} succeeded · ${sum('failed')} failed · ${sum('attempts')} attempts`,
    })
    .waitFor();
  // The legend names every series; the same numbers are in a table for screen readers.
  for (const label of ['succeeded', 'failed', 'attempts', 'p99 ms'])
    await stats.getByRole('list', { name: 'Legend' }).getByText(label, { exact: true }).waitFor();
  await stats.getByText('The numbers, hour by hour').click();
  expect(await stats.locator('details tbody tr').count()).toBe(
    api.body.buckets.filter((b: { deliveries: number }) => b.deliveries > 0).length,
  );
  await stats.getByText('The numbers, hour by hour').click();
  expect(await axeViolations(page)).toEqual([]);
  await stats.screenshot({ path: path.join(SCREENSHOTS, 'webhook-stats.png') });
  // Another range asks the API again.
  await stats.getByLabel('Range').selectOption('168');
  await stats.getByTestId('stats-totals').waitFor();
});

it("shows the request as sent, from a delivery's page, with every secret redacted", async () => {
  const deliveries = page.getByRole('region', { name: 'Deliveries', exact: true });
  await deliveries.locator('tbody tr').filter({ hasText: 'succeeded' }).first().getByRole('link').click();
  await page.getByRole('link', { name: 'Request as sent' }).click();
  await page.getByRole('heading', { name: 'Request as sent' }).waitFor();
  const body = await page.getByTestId('request-body').textContent();
  expect(body).toContain('[redacted]');
  await page
    .getByRole('row', { name: /x-api-key/i })
    .getByText('[redacted]')
    .waitFor();
  await page
    .getByRole('row', { name: /webhook-signature/ })
    .getByText(/^v1,/)
    .waitFor();
  const text = (await page.content()) + (await page.locator('body').innerText());
  for (const secret of [
    TOKEN,
    API_KEY,
    JSON.stringify(TOKEN).slice(1, -1),
    JSON.stringify(API_KEY).slice(1, -1),
    'sk_live_',
    'k3y-',
  ])
    expect(text).not.toContain(secret);
  expect(await axeViolations(page)).toEqual([]);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'delivery-request.png'), fullPage: true });
});

it('leads back to the delivery, and explains a delivery it cannot show', async () => {
  await page.getByRole('link', { name: '← Back to the delivery' }).click();
  await page.getByRole('heading', { name: /^Delivery/ }).waitFor();
  await page.goto(`${stack.api.baseUrl}/console/webhooks/${webhookId}/deliveries/${randomUUID()}/request`);
  await page.getByText('Request as sent: Not found (404)').waitFor();
});

it('made no request to another origin', () => {
  expect(offOrigin).toEqual([]);
});
