import { createHmac } from 'node:crypto';
import { generateSigningSecret } from '@gatehook/core/signing-secret';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { deliveryHeaders, signatureHeader, signPayload } from '@gatehook/delivery/render/signing';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const msgId = '0b9f6c1e-2d7a-4c55-9a34-3f1c2b7e8d90';
const body = JSON.stringify({
  type: 'policy.created',
  timestamp: '2024-11-21T18:05:45.123Z',
  data: { id: 'e1', name: 'Ünïcödé ✓ 🚀' },
});

/** Headers a receiver would see for one signed request. */
function headersFor(secrets: string[], timestamp: number, payload: string | Buffer = body): Record<string, string> {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, msgId, timestamp, payload),
  };
}

describe('signPayload', () => {
  it('reproduces the Standard Webhooks reference vector', () => {
    // From the "sign function works" test of standard-webhooks/standard-webhooks, libraries/javascript.
    expect(
      signPayload(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('matches an HMAC computed independently with node:crypto', () => {
    const secret = generateSigningSecret();
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const expected = createHmac('sha256', key)
      .update(Buffer.from(`${msgId}.1700000000.${body}`, 'utf8'))
      .digest('base64');
    expect(signPayload(secret, msgId, 1700000000, body)).toBe(`v1,${expected}`);
  });

  it('signs a Buffer body as the same bytes as its string', () => {
    const secret = generateSigningSecret();
    expect(signPayload(secret, msgId, 1700000000, Buffer.from(body, 'utf8'))).toBe(
      signPayload(secret, msgId, 1700000000, body),
    );
  });

  it('signs raw bytes that are not valid UTF-8 without re-encoding them', () => {
    const secret = generateSigningSecret();
    const bytes = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const expected = createHmac('sha256', key)
      .update(Buffer.concat([Buffer.from(`${msgId}.1.`), bytes]))
      .digest('base64');
    expect(signPayload(secret, msgId, 1, bytes)).toBe(`v1,${expected}`);
  });

  it('changes with every signed part', () => {
    const secret = generateSigningSecret();
    const base = signPayload(secret, msgId, 1700000000, body);
    expect(signPayload(secret, `${msgId}x`, 1700000000, body)).not.toBe(base);
    expect(signPayload(secret, msgId, 1700000001, body)).not.toBe(base);
    expect(signPayload(secret, msgId, 1700000000, `${body} `)).not.toBe(base);
    expect(signPayload(generateSigningSecret(), msgId, 1700000000, body)).not.toBe(base);
  });

  it.each([
    ['no prefix', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    ['prefix only', 'whsec_'],
    ['not base64', 'whsec_not base64!'],
    ['bad padding', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS'],
  ])('rejects a secret with %s', (_label, secret) => {
    expect(() => signPayload(secret, msgId, 1, body)).toThrow(TypeError);
  });

  it.each([1.5, -1, Number.NaN, Number.MAX_SAFE_INTEGER + 1])('rejects timestamp %p', (timestamp) => {
    expect(() => signPayload(generateSigningSecret(), msgId, timestamp, body)).toThrow(RangeError);
  });
});

describe('signatureHeader verified by the official libraries', () => {
  const secret = generateSigningSecret();

  it('verifies with standardwebhooks and svix', () => {
    const headers = headersFor([secret], nowSeconds());
    expect(new StandardWebhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new SvixWebhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('verifies a Buffer body', () => {
    const raw = Buffer.from(body, 'utf8');
    const headers = headersFor([secret], nowSeconds(), raw);
    expect(() => new StandardWebhook(secret).verify(raw, headers)).not.toThrow();
    expect(() => new SvixWebhook(secret).verify(raw, headers)).not.toThrow();
  });

  it('verifies an NDJSON body when the receiver does not parse it as one JSON value', () => {
    const ndjson = '{"a":1}\n{"b":2}\n';
    const headers = headersFor([secret], nowSeconds(), ndjson);
    expect(() => new StandardWebhook(secret).verify(ndjson, headers, { jsonParse: false })).not.toThrow();
    expect(() => new StandardWebhook(secret).verify(ndjson.replace('1', '2'), headers, { jsonParse: false })).toThrow();
  });

  it('fails on a tampered body, id or timestamp', () => {
    const timestamp = nowSeconds();
    const headers = headersFor([secret], timestamp);
    const tampered = body.replace('policy.created', 'policy.deleted');
    for (const Verifier of [StandardWebhook, SvixWebhook]) {
      const verifier = new Verifier(secret);
      expect(() => verifier.verify(tampered, headers)).toThrow();
      expect(() => verifier.verify(body, { ...headers, 'webhook-id': `${msgId}0` })).toThrow();
      expect(() => verifier.verify(body, { ...headers, 'webhook-timestamp': String(timestamp - 1) })).toThrow();
    }
  });

  it('fails with a secret that did not sign', () => {
    const headers = headersFor([secret], nowSeconds());
    expect(() => new StandardWebhook(generateSigningSecret()).verify(body, headers)).toThrow();
    expect(() => new SvixWebhook(generateSigningSecret()).verify(body, headers)).toThrow();
  });

  describe('during a secret rotation', () => {
    const newest = generateSigningSecret();
    const previous = generateSigningSecret();

    it('carries one signature per secret, newest first, space-separated', () => {
      const header = signatureHeader([newest, previous], msgId, 1700000000, body);
      expect(header).toBe(
        `${signPayload(newest, msgId, 1700000000, body)} ${signPayload(previous, msgId, 1700000000, body)}`,
      );
      expect(header.split(' ')).toHaveLength(2);
    });

    it.each([
      ['the newest secret', newest],
      ['the previous secret', previous],
    ])('verifies with %s alone', (_label, receiverSecret) => {
      const headers = headersFor([newest, previous], nowSeconds());
      expect(() => new StandardWebhook(receiverSecret).verify(body, headers)).not.toThrow();
      expect(() => new SvixWebhook(receiverSecret).verify(body, headers)).not.toThrow();
    });

    it('still fails on a tampered body with either secret', () => {
      const headers = headersFor([newest, previous], nowSeconds());
      for (const receiverSecret of [newest, previous]) {
        expect(() => new StandardWebhook(receiverSecret).verify(`${body} `, headers)).toThrow();
        expect(() => new SvixWebhook(receiverSecret).verify(`${body} `, headers)).toThrow();
      }
    });
  });

  it('requires at least one secret', () => {
    expect(() => signatureHeader([], msgId, 1, body)).toThrow(RangeError);
  });
});

describe('deliveryHeaders', () => {
  const secret = generateSigningSecret();
  const base = {
    deliveryId: msgId,
    timestampSeconds: 1700000000,
    body,
    secrets: [secret],
    contentType: 'application/json',
    userAgent: 'Gatehook-Webhooks/0.1.0',
  };

  it('puts the reserved headers first, in order, then the custom ones', () => {
    const headers = deliveryHeaders({ ...base, custom: { Authorization: 'Bearer t', 'X-Team': 'sec' } });
    expect(Object.keys(headers)).toEqual([
      'content-type',
      'user-agent',
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
      'Authorization',
      'X-Team',
    ]);
    expect(headers).toEqual({
      'content-type': 'application/json',
      'user-agent': 'Gatehook-Webhooks/0.1.0',
      'webhook-id': msgId,
      'webhook-timestamp': '1700000000',
      'webhook-signature': signPayload(secret, msgId, 1700000000, body),
      Authorization: 'Bearer t',
      'X-Team': 'sec',
    });
  });

  it('produces headers that the official libraries verify', () => {
    const previous = generateSigningSecret();
    const headers = deliveryHeaders({
      ...base,
      timestampSeconds: nowSeconds(),
      secrets: [secret, previous],
      custom: {},
    });
    expect(() => new StandardWebhook(previous).verify(body, headers)).not.toThrow();
    expect(() => new SvixWebhook(secret).verify(body, headers)).not.toThrow();
  });

  it('skips custom headers that collide with reserved names in any case', () => {
    const headers = deliveryHeaders({
      ...base,
      custom: {
        'Content-Type': 'text/plain',
        'USER-AGENT': 'evil',
        'Webhook-Id': 'forged',
        'webhook-timestamp': '0',
        'WEBHOOK-SIGNATURE': 'v1,forged',
        'Content-Length': '1',
        Host: 'internal',
        'Transfer-Encoding': 'chunked',
        Connection: 'close',
        'X-Kept': 'yes',
      },
    });
    expect(Object.keys(headers)).toEqual([
      'content-type',
      'user-agent',
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
      'X-Kept',
    ]);
    expect(headers['content-type']).toBe('application/json');
    expect(headers['webhook-id']).toBe(msgId);
  });

  it('skips names that are not HTTP tokens, values with CR, LF or NUL, and case-insensitive repeats', () => {
    const headers = deliveryHeaders({
      ...base,
      custom: {
        'Bad Name': 'x',
        'X-Injected': 'a\r\nX-Evil: 1',
        'X-Nul': 'a\0b',
        'X-Dup': 'first',
        'x-dup': 'second',
        'X-Ok': '',
      },
    });
    expect(Object.keys(headers).slice(5)).toEqual(['X-Dup', 'X-Ok']);
    expect(headers['X-Dup']).toBe('first');
  });

  it('keeps a header named __proto__ as an ordinary header', () => {
    const custom = JSON.parse('{"__proto__":"value"}') as Record<string, string>;
    const headers = deliveryHeaders({ ...base, custom });
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
    expect(Object.keys(headers)).toContain('__proto__');
    expect(Object.getOwnPropertyDescriptor(headers, '__proto__')?.value).toBe('value');
  });
});
