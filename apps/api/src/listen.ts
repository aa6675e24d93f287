import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { ensureDevelopmentCa, issueLocalCertificate, DEVELOPMENT_CA_DIR } from '@gatehook/egress/development-ca';

/**
 * `gatehook listen` (CONTRACT 17): a local HTTPS receiver for development. Its certificate is issued at start by
 * the development CA that `pnpm start` makes the service trust in development; it prints the webhook URL, then a
 * line per delivery naming its webhook-id, each event's data.id and whether the signature verified.
 */
export interface ListenOptions {
  port: number;
  /** The webhook's signing secret (whsec_…); without it nothing is verified, and each line says so. */
  secret?: string | undefined;
  caDir?: string;
  /** Where lines go (stdout in the CLI). */
  write(line: string): void;
}

export interface Listener {
  url: string;
  close(): Promise<void>;
}

// A delivery body is at most 1 MB; a little more is read so that an oversized one is reported, not cut.
const MAX_BODY_BYTES = 2 * 1_048_576;

/** The `data.id` of each event of a body in any of the three formats (single, array, ndjson). */
export function eventIdsOf(body: string, contentType: string | undefined): string[] {
  const idOf = (value: unknown): string => {
    const id = (value as { data?: { id?: unknown } } | null)?.data?.id;
    return typeof id === 'string' ? id : '?';
  };
  try {
    if (contentType?.startsWith('application/x-ndjson'))
      return body
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => idOf(JSON.parse(l)));
    const parsed: unknown = JSON.parse(body);
    return Array.isArray(parsed) ? parsed.map(idOf) : [idOf(parsed)];
  } catch {
    return ['(body is not JSON)'];
  }
}

/** The verdict on a delivery's signature: `verified`, `NOT verified (<why>)`, or that no secret was given. */
export function signatureVerdict(
  verifier: Webhook | null,
  body: string,
  headers: IncomingHttpHeaders,
): { ok: boolean; text: string } {
  if (!verifier) return { ok: true, text: 'signature not checked (start with --secret whsec_… to verify)' };
  try {
    verifier.verify(body, {
      'webhook-id': String(headers['webhook-id'] ?? ''),
      'webhook-timestamp': String(headers['webhook-timestamp'] ?? ''),
      'webhook-signature': String(headers['webhook-signature'] ?? ''),
    });
    return { ok: true, text: 'signature verified' };
  } catch (error) {
    const why = error instanceof WebhookVerificationError ? error.message : 'unreadable headers';
    return { ok: false, text: `signature NOT verified (${why})` };
  }
}

/** Starts the receiver on 127.0.0.1; the first line written is the webhook URL. */
export async function startListener(options: ListenOptions): Promise<Listener> {
  // Fail before listening when the secret is malformed, not on the first delivery.
  const verifier = options.secret ? new Webhook(options.secret) : null;
  const ca = ensureDevelopmentCa(options.caDir ?? DEVELOPMENT_CA_DIR);
  const { certPem, keyPem } = issueLocalCertificate(ca);
  const server: Server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      const time = new Date().toISOString();
      if (req.method !== 'POST') {
        res.writeHead(405, { allow: 'POST' }).end();
        return;
      }
      if (size > MAX_BODY_BYTES) {
        options.write(`${time} a request of ${size} bytes, larger than any delivery: refused`);
        res.writeHead(413).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const verdict = signatureVerdict(verifier, body, req.headers);
      const ids = eventIdsOf(body, req.headers['content-type']);
      const webhookId = typeof req.headers['webhook-id'] === 'string' ? req.headers['webhook-id'] : '(none)';
      options.write(`${time} webhook-id ${webhookId}  events ${ids.join(', ')}  ${verdict.text}`);
      // A receiver rejects what does not verify; Gatehook then records the attempt as failed and retries it.
      res
        .writeHead(verdict.ok ? 200 : 401, { 'content-type': 'text/plain' })
        .end(verdict.ok ? 'ok' : 'signature not verified');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `https://127.0.0.1:${port}/webhook`;
  options.write(url);
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
