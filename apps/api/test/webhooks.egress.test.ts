import { SecretBox } from '@gatehook/core/encryption';
import { sqlPool } from '@gatehook/db/client';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { createClientCa, selfSignedWithKey } from '@gatehook/testkit/pki';
import { warnExpiringClientCertificates } from '@gatehook/db/webhook/certificate';
import { CLIENT_CERTIFICATE_WARNING_DAYS } from '@gatehook/egress/client-certificate';
import { X509Certificate } from 'node:crypto';
import { testLookup } from './lookup';

let api: TestApi;
let org: TestOrg;
let box: SecretBox;
const ca = createClientCa();
const first = ca.issue({ commonName: 'first', notAfter: new Date(Date.now() + 90 * 86_400_000) });
const second = ca.issue({ commonName: 'second', notAfter: new Date(Date.now() + 90 * 86_400_000) });
const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;
const base = { name: 'mTLS', url: 'https://hooks.example.com/in/abc123XYZ', events: ['policy.created'] };

beforeAll(async () => {
  api = await startTestApi({ lookup: testLookup });
  org = await createTestOrg(api.db);
  box = new SecretBox(api.config.GATEHOOK_ENCRYPTION_KEY);
});
afterAll(() => api.close());

async function create(body: Record<string, unknown>) {
  const r = await api.call('POST', '/webhooks', { key: org.admin, body: { ...base, ...body } });
  expect(r.status).toBe(201);
  return r.body;
}

// What the worker runs hourly (apps/worker/src/certificate-expiry.ts).
const warnExpiringCertificates = (pool: ReturnType<typeof sqlPool>) =>
  warnExpiringClientCertificates(pool, new Date(), CLIENT_CERTIFICATE_WARNING_DAYS);
const patch = (id: string, body: Record<string, unknown>) =>
  api.call('PATCH', `/webhooks/${id}`, { key: org.admin, body });

describe('client_certificate (CONTRACT 18)', () => {
  it('is stored encrypted and returned only as fingerprint and expiry', async () => {
    const created = await create({ client_certificate: { cert: first.certPem, key: first.keyPem } });
    expect(created.client_certificate).toEqual({
      fingerprint_sha256: fingerprint(first.certPem),
      not_after: new Date(new X509Certificate(first.certPem).validTo).toISOString(),
    });
    expect(JSON.stringify(created)).not.toContain('BEGIN');
    const row = await api.db.webhook.findUniqueOrThrow({ where: { id: created.id } });
    expect(row.clientCertificateEncrypted).not.toContain('BEGIN');
    expect(
      JSON.parse(
        box.decrypt(row.clientCertificateEncrypted!, {
          column: 'webhooks.client_certificate_encrypted',
          row: created.id,
        }),
      ),
    ).toEqual({ cert: first.certPem, key: first.keyPem });
    const got = await api.call('GET', `/webhooks/${created.id}`, { key: org.admin });
    expect(got.body.client_certificate.fingerprint_sha256).toBe(fingerprint(first.certPem));
  });

  it('defaults to null; absent in a PATCH keeps it, a new one replaces it, null removes it; audits fingerprints only', async () => {
    expect((await create({})).client_certificate).toBeNull();
    const created = await create({ client_certificate: { cert: first.certPem, key: first.keyPem } });
    const kept = await patch(created.id, { name: 'renamed' });
    expect(kept.body.client_certificate.fingerprint_sha256).toBe(fingerprint(first.certPem));
    const replaced = await patch(created.id, { client_certificate: { cert: second.certPem, key: second.keyPem } });
    expect(replaced.body.client_certificate.fingerprint_sha256).toBe(fingerprint(second.certPem));
    const removed = await patch(created.id, { client_certificate: null });
    expect(removed.status).toBe(200);
    expect(removed.body.client_certificate).toBeNull();
    const row = await api.db.webhook.findUniqueOrThrow({ where: { id: created.id } });
    expect(row.clientCertificateEncrypted).toBeNull();
    const events = await api.db.auditEvent.findMany({
      where: { orgId: org.orgId, resourceId: created.id, action: 'webhook.updated' },
    });
    const diffs = JSON.stringify(events.map((e) => e.changes));
    expect(diffs).toContain(fingerprint(second.certPem));
    expect(diffs).not.toContain('BEGIN');
  });

  it.each([
    [
      'does not parse',
      () => ({ cert: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----', key: first.keyPem }),
      /does not parse/,
    ],
    ['does not match its key', () => ({ cert: first.certPem, key: second.keyPem }), /does not match/],
    [
      'has expired',
      () => {
        const old = ca.issue({
          notBefore: new Date(Date.now() - 5 * 86_400_000),
          notAfter: new Date(Date.now() - 60_000),
        });
        return { cert: old.certPem, key: old.keyPem };
      },
      /expired/,
    ],
  ])(
    'refuses a certificate that %s with 422 on client_certificate, on create and on PATCH',
    async (_name, make, message) => {
      const certificate = make();
      const created = await api.call('POST', '/webhooks', {
        key: org.admin,
        body: { ...base, client_certificate: certificate },
      });
      expect(created.status).toBe(422);
      expect(created.body.error.details).toEqual([
        { path: 'client_certificate', message: expect.stringMatching(message) },
      ]);
      expect(JSON.stringify(created.body)).not.toContain('PRIVATE KEY');
      const id = (await create({})).id;
      const patched = await patch(id, { client_certificate: certificate });
      expect(patched.status).toBe(422);
      expect(patched.body.error.details[0].path).toBe('client_certificate');
    },
  );

  it('refuses a client key outside EC P-256/P-384, Ed25519 and RSA 2048-4096 with 422 naming the field', async () => {
    const weak = selfSignedWithKey('rsa:1024');
    const created = await api.call('POST', '/webhooks', {
      key: org.admin,
      body: { ...base, client_certificate: weak },
    });
    expect(created.status).toBe(422);
    expect(created.body.error.details).toEqual([
      { path: 'client_certificate.cert', message: expect.stringMatching(/RSA key of 1024 bits is not supported/) },
    ]);
    const mixed = await api.call('POST', '/webhooks', {
      key: org.admin,
      body: { ...base, client_certificate: { cert: first.certPem, key: weak.key } },
    });
    expect(mixed.status).toBe(422);
    expect(mixed.body.error.details).toEqual([
      { path: 'client_certificate.key', message: expect.stringMatching(/RSA key of 1024 bits/) },
    ]);
    expect(JSON.stringify([created.body, mixed.body])).not.toContain('PRIVATE KEY');
  });

  it("must be given again or removed when the URL's origin changes, not when only its path does", async () => {
    const created = await create({ name: 'moving', client_certificate: { cert: first.certPem, key: first.keyPem } });
    const kept = await patch(created.id, { url: 'https://hooks.example.com/other/path' });
    expect(kept.status).toBe(200);
    expect(kept.body.client_certificate.fingerprint_sha256).toBe(fingerprint(first.certPem));

    const refused = await patch(created.id, { url: 'https://siem.example.com/in' });
    expect(refused.status).toBe(422);
    expect(refused.body.error.details).toEqual([
      { path: 'client_certificate', message: "must be supplied again (or set to null) when the URL's origin changes" },
    ]);
    expect((await api.call('GET', `/webhooks/${created.id}`, { key: org.admin })).body.url).toMatch(
      /^https:\/\/hooks\.example\.com\//,
    );

    const moved = await patch(created.id, {
      url: 'https://siem.example.com/in',
      client_certificate: { cert: second.certPem, key: second.keyPem },
    });
    expect(moved.status).toBe(200);
    expect(moved.body.client_certificate.fingerprint_sha256).toBe(fingerprint(second.certPem));
    const removed = await patch(created.id, { url: 'https://hooks.example.com/in', client_certificate: null });
    expect(removed.status).toBe(200);
    expect(removed.body.client_certificate).toBeNull();
    // Without a certificate there is nothing to give again.
    expect((await patch(created.id, { url: 'https://siem.example.com/in' })).status).toBe(200);
  });

  it('warns the organisation once per certificate, 30 days before it expires', async () => {
    const soon = ca.issue({ commonName: 'soon', notAfter: new Date(Date.now() + 10 * 86_400_000) });
    const created = await create({ name: 'expiring', client_certificate: { cert: soon.certPem, key: soon.keyPem } });
    const pool = sqlPool(api.db);
    const notices = () =>
      api.db.notification.findMany({
        where: { orgId: org.orgId, webhookId: created.id, kind: 'client_certificate_expiring' },
      });
    // Two workers at once, and the next day's run, warn once.
    await Promise.all([warnExpiringCertificates(pool), warnExpiringCertificates(pool)]);
    await warnExpiringCertificates(pool);
    const once = await notices();
    expect(once).toHaveLength(1);
    expect(once[0]!.message).toContain('expires on');
    expect(once[0]!.message).toContain(fingerprint(soon.certPem));
    // A certificate far from expiry is not warned about; a new soon-expiring one is, once more.
    const later = await create({ name: 'fine', client_certificate: { cert: first.certPem, key: first.keyPem } });
    const again = ca.issue({ commonName: 'again', notAfter: new Date(Date.now() + 20 * 86_400_000) });
    await patch(created.id, { client_certificate: { cert: again.certPem, key: again.keyPem } });
    await warnExpiringCertificates(pool);
    expect(await notices()).toHaveLength(2);
    expect(await api.db.notification.count({ where: { webhookId: later.id } })).toBe(0);
    const listed = await api.call('GET', '/notifications', { key: org.admin });
    expect(listed.body.items.map((n: { kind: string }) => n.kind)).toContain('client_certificate_expiring');
  });
});

describe('rate_limit_per_second (CONTRACT 18)', () => {
  it('defaults to null, is set on create, changed and removed by PATCH', async () => {
    expect((await create({})).rate_limit_per_second).toBeNull();
    const created = await create({ rate_limit_per_second: 50 });
    expect(created.rate_limit_per_second).toBe(50);
    expect((await patch(created.id, { name: 'kept' })).body.rate_limit_per_second).toBe(50);
    expect((await patch(created.id, { rate_limit_per_second: 10_000 })).body.rate_limit_per_second).toBe(10_000);
    expect((await patch(created.id, { rate_limit_per_second: null })).body.rate_limit_per_second).toBeNull();
  });
});
