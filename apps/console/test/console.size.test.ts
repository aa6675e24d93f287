import type { Browser, Page } from 'playwright-core';
import { startStack, type Stack } from '@gatehook/testkit/stack';
import type { TestReceiver } from '@gatehook/testkit/receiver';
import { ensureConsoleBuilt, launch, signIn } from './browser';

// The console in an organisation of 1,000 webhooks and 100,000 deliveries: every screen holds one API page, moves
// by cursor, and never asks the API for the whole of anything. Asserted by what the browser holds and requests,
// not by timings.
jest.setTimeout(120_000);

const WEBHOOKS = 1_000;
const DELIVERIES = 100_000;

let stack: Stack;
let browser: Browser;
let page: Page;
let receiver: TestReceiver;
let busiest = '';
/** Every API request the console made: path and query, and the size of the answer. */
const requests: { path: string; bytes: number }[] = [];

beforeAll(async () => {
  ensureConsoleBuilt();
  // One after the other, each kept as soon as it is up: afterAll closes whatever started, even if the other failed
  // (a browser left open keeps jest from exiting).
  browser = await launch();
  stack = await startStack();
  // Nothing here is delivered (the deliveries below are written as history): without its worker, the 1,000 creates
  // do not each make a fan-out reload the organisation's growing list of webhooks.
  await stack.engine.stop();
  receiver = await stack.receiver();
  // Through the API, 10 at a time: concurrent creates in one organisation all succeed.
  const statuses = new Map<number, number>();
  for (let i = 0; i < WEBHOOKS; i += 10) {
    const created = await Promise.all(
      Array.from({ length: 10 }, (_, j) =>
        stack.api.call('POST', '/webhooks', {
          key: stack.org.admin,
          body: {
            name: `hook-${String(i + j).padStart(4, '0')}`,
            url: receiver.url(`/in/${i + j}`),
            events: ['policy.created'],
          },
        }),
      ),
    );
    for (const response of created) statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    busiest = created.at(-1)!.body.id; // hook-0999, the newest: on the first page
  }
  expect(Object.fromEntries(statuses)).toEqual({ 201: WEBHOOKS });
  // Deliveries are history: written directly, final, one in ten failed, one a second back in time.
  await stack.api.db.$executeRawUnsafe(
    `INSERT INTO deliveries (id, org_id, webhook_id, status, event_ids, event_count, attempt_count, created_at, updated_at)
     SELECT gen_random_uuid(), $1::uuid, $2::uuid, (CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'succeeded' END)::"DeliveryStatus",
            ARRAY[gen_random_uuid()], 1, 1, now() - g * interval '1 second', now()
     FROM generate_series(1, ${DELIVERIES}) AS g`,
    stack.org.orgId,
    busiest,
  );
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(15_000);
  page = await context.newPage();
  page.on('response', async (response) => {
    const url = new URL(response.url());
    if (url.origin !== stack.api.baseUrl || url.pathname.startsWith('/console')) return;
    const body = await response.body().catch(() => Buffer.alloc(0));
    requests.push({ path: `${url.pathname}${url.search}`, bytes: body.length });
  });
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

const rows = () => page.locator('tbody tr').count();

it('lists 1,000 webhooks one page of 50 at a time, forwards and back', async () => {
  await signIn(page, stack.api.baseUrl, stack.org.admin);
  await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
  // Newest first.
  await page.getByRole('link', { name: 'hook-0999', exact: true }).waitFor();
  expect(await rows()).toBe(50);
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.getByText('Page 2').waitFor();
  await page.getByRole('link', { name: 'hook-0949', exact: true }).waitFor();
  expect(await rows()).toBe(50);
  expect(await page.getByRole('link', { name: 'hook-0999', exact: true }).count()).toBe(0);
  await page.getByRole('button', { name: 'Previous page' }).click();
  await page.getByRole('link', { name: 'hook-0999', exact: true }).waitFor();
});

it("shows a webhook's 100,000 deliveries 25 at a time, and filters by status on the server", async () => {
  await page.getByRole('link', { name: 'hook-0999', exact: true }).click();
  await page.getByRole('heading', { name: 'hook-0999' }).waitFor();
  const deliveries = page.getByRole('region', { name: 'Deliveries' });
  await deliveries.getByRole('row').filter({ hasText: 'succeeded' }).first().waitFor();
  expect(await deliveries.locator('tbody tr').count()).toBe(25);
  await deliveries.getByRole('button', { name: 'Next page' }).click();
  await deliveries.getByText('Page 2').waitFor();
  expect(await deliveries.locator('tbody tr').count()).toBe(25);
  await deliveries.getByLabel('Delivery status').selectOption('failed');
  await deliveries.getByText('Page 1').waitFor();
  // The previous page stays on screen until the filtered one arrives.
  await deliveries.locator('tbody tr').filter({ hasText: 'succeeded' }).first().waitFor({ state: 'detached' });
  await deliveries.locator('tbody tr').filter({ hasText: 'failed' }).first().waitFor();
  expect(await deliveries.locator('tbody tr').count()).toBe(25);
});

it('never asked the API for more than one page of anything', () => {
  expect(requests.length).toBeGreaterThan(0);
  for (const { path, bytes } of requests) {
    const limit = new URLSearchParams(path.split('?')[1] ?? '').get('limit');
    if (/^\/webhooks(\/[^/]+\/(deliveries|tasks))?$/.test(path.split('?')[0]!))
      expect([path, Number(limit) <= 50]).toEqual([path, true]);
    // A page of 50 webhooks or 25 deliveries is tens of kilobytes; the whole organisation would be megabytes.
    expect([path, bytes < 200_000]).toEqual([path, true]);
  }
  // Polling the open delivery list is one page every few seconds, not a scan: a bounded number of requests.
  expect(requests.length).toBeLessThan(60);
});
