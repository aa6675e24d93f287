import { mkdtempSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPki, type Pki } from './pki';

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** Header names in the order they arrived on the wire. */
  headerOrder: string[];
  body: string;
  at: number;
}

/** What the receiver answers: a status with optional headers and body, or `hang` to never answer. */
export type Reply = { status: number; headers?: Record<string, string>; body?: string } | 'hang';
export type ReplyFn = (request: ReceivedRequest, index: number) => Reply | Promise<Reply>;

export interface TestReceiver {
  /** https://127.0.0.1:<port><path> */
  url(path?: string): string;
  requests: ReceivedRequest[];
  /** Requests currently waiting for an answer, and the most there ever were at once. */
  inFlight(): { now: number; max: number };
  reply(fn: ReplyFn): void;
  /** Resolves once `predicate` holds over the received requests, or rejects after `timeoutMs`. */
  waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

let shared: { pki: Pki; caFile: string } | undefined;

/** The test CA, created once per test process, and a file holding it for EGRESS_EXTRA_CA_FILE. */
export function testCa(): { pki: Pki; caFile: string } {
  if (!shared) {
    const pki = createPki();
    const caFile = path.join(mkdtempSync(path.join(tmpdir(), 'gatehook-ca-')), 'ca.pem');
    writeFileSync(caFile, pki.caPem);
    shared = { pki, caFile };
  }
  return shared;
}

/**
 * A real HTTPS receiver on 127.0.0.1 with a certificate of the test CA (or of `pki`, the test CA of another
 * process); answers 200 unless told otherwise.
 */
export async function startReceiver(
  reply: ReplyFn = () => ({ status: 200, body: 'ok' }),
  options: { clientCa?: string; pki?: Pki } = {},
): Promise<TestReceiver> {
  const pki = options.pki ?? testCa().pki;
  let replyFn = reply;
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  let inFlight = 0;
  let maxInFlight = 0;

  // With `clientCa`, only clients presenting a certificate of that CA complete the handshake (mTLS).
  const mtls =
    options.clientCa === undefined ? {} : { ca: options.clientCa, requestCert: true, rejectUnauthorized: true };
  const server: Server = createServer({ key: pki.keyPem, cert: pki.certPem, ...mtls }, (req, res) => {
    const chunks: Buffer[] = [];
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    let done = false;
    const finish = () => {
      if (!done) {
        done = true;
        inFlight -= 1;
      }
    };
    res.on('close', finish);
    // A sender that goes away mid-request (a worker killed or timing out) resets the connection: ordinary here.
    req.on('error', () => undefined);
    res.on('error', () => undefined);
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        headerOrder: req.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase()),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      const index = requests.push(received) - 1;
      const answer = await replyFn(received, index);
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    });
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: (p = '/hook') => `https://127.0.0.1:${port}${p}`,
    requests,
    inFlight: () => ({ now: inFlight, max: maxInFlight }),
    reply(fn) {
      replyFn = fn;
    },
    async waitFor(predicate, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(requests)) {
        if (Date.now() > deadline)
          throw new Error(`receiver: condition not met within ${timeoutMs} ms (${requests.length} requests)`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
