import { randomUUID } from 'node:crypto';
import { DEVELOPMENT_ENCRYPTION_KEY } from '@gatehook/core/config';
import { SecretBox, type SecretPlace } from '@gatehook/core/encryption';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import { createDb, sqlPool } from '@gatehook/db/client';
import { TEST_DATABASE_URL } from '@gatehook/testkit/env';
import { LiveWebhooks, WebhookConfigs } from './webhook-configs';

/** A SecretBox that counts its decryptions: how many webhooks were opened. */
class CountingBox extends SecretBox {
  decryptions = 0;
  override decrypt(...args: Parameters<SecretBox['decrypt']>): string {
    this.decryptions += 1;
    return super.decrypt(...args);
  }
}

const box = new CountingBox(DEVELOPMENT_ENCRYPTION_KEY);
const id = '5e1d0000-0000-4000-8000-00000000c001';
const place = (column: SecretPlace['column']): SecretPlace => ({ column, row: id });
const stored: StoredWebhook = {
  id,
  orgId: '5e1d0000-0000-4000-8000-00000000a001',
  name: 'memo',
  status: 'active',
  events: ['policy.created'],
  condition: 'event.actor_id == "u-1"',
  format: 'single',
  maxEvents: 1,
  template: '',
  urlEncrypted: box.encrypt('https://receiver.example/hook', place('webhooks.url_encrypted')),
  varsEncrypted: null,
  varNames: [],
  headersEncrypted: null,
  secretEncrypted: box.encrypt('whsec_dGVzdA==', place('webhooks.secret_encrypted')),
  previousSecretEncrypted: null,
  previousSecretValidUntil: null,
  activeSince: new Date('2026-01-01T00:00:00.000Z'),
  clientCertificateEncrypted: null,
  rateLimitPerSecond: null,
  auth: null,
  authSecretEncrypted: null,
};

describe('LiveWebhooks', () => {
  it('opens and compiles a webhook once per version of its row, however often its organisation is reloaded', () => {
    const live = new LiveWebhooks(box);
    const first = live.of(stored);
    const opened = box.decryptions;
    expect(opened).toBeGreaterThan(0);
    // A reload reads a fresh copy of the same row: nothing is decrypted again, the compiled webhook is the same.
    expect(live.of({ ...stored, events: [...stored.events] })).toBe(first);
    expect(box.decryptions).toBe(opened);

    // Any change to the row is a new version: a status set by a statement, a rotated secret.
    const paused = live.of({ ...stored, status: 'paused' });
    expect(paused).not.toBe(first);
    expect(paused.status).toBe('paused');
    const rotated = live.of({
      ...stored,
      secretEncrypted: box.encrypt('whsec_bmV3', place('webhooks.secret_encrypted')),
    });
    expect(rotated.secret).toBe('whsec_bmV3');
    expect(first.secret).toBe('whsec_dGVzdA==');
  });

  it('gives the row it hands on its version key, which another LiveWebhooks (a render thread) finds it by', () => {
    const main = new LiveWebhooks(box);
    const thread = new LiveWebhooks(box);
    const handed = main.of(stored).stored;
    expect(handed.version).toMatch(new RegExp(`^${id}:`));
    expect(main.of({ ...stored, status: 'paused' }).stored.version).not.toBe(handed.version);

    const opened = box.decryptions;
    const inThread = thread.of(structuredClone(handed));
    expect(box.decryptions).toBeGreaterThan(opened);
    // The key carried and the key computed from the bare row agree: the thread compiled that version once.
    const again = box.decryptions;
    expect(thread.of(stored)).toBe(inThread);
    expect(thread.of(structuredClone(handed))).toBe(inThread);
    expect(box.decryptions).toBe(again);
  });
});

describe('WebhookConfigs', () => {
  const db = createDb(TEST_DATABASE_URL, { poolSize: 2 });
  afterAll(() => db.$disconnect());

  async function seed(orgId: string, count: number): Promise<string[]> {
    await db.organization.create({ data: { id: orgId, name: 'configs' } });
    const ids = Array.from({ length: count }, () => randomUUID());
    await db.webhook.createMany({
      data: ids.map((id, i) => ({
        id,
        orgId,
        name: `hook ${i}`,
        events: ['*'],
        varNames: [],
        headerNames: [],
        urlMask: 'https://receiver.example/…',
        urlEncrypted: box.encrypt(`https://receiver.example/${i}`, { column: 'webhooks.url_encrypted', row: id }),
        secretEncrypted: box.encrypt('whsec_dGVzdA==', { column: 'webhooks.secret_encrypted', row: id }),
        activeSince: new Date('2026-01-01T00:00:00.000Z'),
      })),
    });
    return ids;
  }

  it('reloads an organisation by the versions of its rows, reading in full only the rows that changed', async () => {
    const orgId = randomUUID();
    const ids = await seed(orgId, 4);
    const configs = new WebhookConfigs(db, box);
    const pool = sqlPool(db);
    const queries = jest.spyOn(pool, 'query');
    const fullReads = () =>
      queries.mock.calls.flatMap(([config]) => {
        const { name, values } = config as unknown as { name?: string; values?: unknown[] };
        return name === 'load_webhook_versions' ? [values![1] as string[]] : [];
      });
    try {
      const first = await configs.ofOrg(orgId);
      expect(first.map((w) => w.id).sort()).toEqual([...ids].sort());
      expect(fullReads()).toEqual([expect.arrayContaining(ids)]);

      // Changes made by statements, as a circuit breaker's disable or the API's edit would: every changed column is a
      // new version, whatever it is; the unchanged rows are neither read in full nor opened again.
      const [renamed, paused, unchanged, deleted] = ids as [string, string, string, string];
      await pool.query(`UPDATE webhooks SET name = 'renamed' WHERE id = $1`, [renamed]);
      await pool.query(`UPDATE webhooks SET status = 'paused' WHERE id = $1`, [paused]);
      await pool.query(`DELETE FROM webhooks WHERE id = $1`, [deleted]);
      queries.mockClear();
      const decryptions = box.decryptions;
      configs.invalidate(orgId);
      const second = new Map((await configs.ofOrg(orgId)).map((w) => [w.id, w]));
      expect([...second.keys()].sort()).toEqual([renamed, paused, unchanged].sort());
      expect(second.get(renamed)!.name).toBe('renamed');
      expect(second.get(paused)!.status).toBe('paused');
      expect(second.get(unchanged)).toBe(first.find((w) => w.id === unchanged));
      expect(fullReads().map((read) => [...read].sort())).toEqual([[renamed, paused].sort()]);
      expect(box.decryptions - decryptions).toBe(4); // two webhooks, a URL and a secret each

      // Nothing changed: the reload reads versions only.
      queries.mockClear();
      configs.invalidate(orgId);
      expect((await configs.ofOrg(orgId)).map((w) => w.id).sort()).toEqual([renamed, paused, unchanged].sort());
      expect(fullReads()).toEqual([]);
    } finally {
      queries.mockRestore();
    }
  });
});
