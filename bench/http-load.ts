// A lean HTTP load generator run as its own process (so it does not share an event loop with anything it
// measures): keep-alive connections, one request in flight per connection, in the shapes of ./load-loop.ts.
// Input: one JSON document on stdin; output: one JSON line {requests, errors, seconds, perSecond, latenciesMs: {p50,
// p99, max}}.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { uuidv7 } from '@gatehook/testkit/audit-events';
import { runLoad, type LoadShape } from './load-loop';

interface LoadSpec extends LoadShape {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** Bodies sent in turn (POST). */
  bodies?: string[];
  /** Paths of `url`'s origin requested in turn instead of its own path. */
  paths?: string[];
  /** The status a request must answer to count as a success (default 200). */
  expectStatus?: number;
  /**
   * A token in the bodies that each request replaces, at every occurrence, with a fresh UUID: events whose ids the
   * client chose, never the same twice, as a gateway that retries with its own ids sends them.
   */
  freshIdToken?: string;
  /** The version of those fresh UUIDs: 4 (random, the default) or 7 (time-ordered, RFC 9562). */
  freshIdVersion?: 4 | 7;
}

// The spec arrives on stdin: bodies may be larger than one command-line argument may be (128 KiB on Linux).
const spec = JSON.parse(readFileSync(0, 'utf8')) as LoadSpec;
const url = new URL(spec.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.mode === 'closed' ? spec.concurrency! : 256 });
let next = 0;
let nextPath = 0;
const expected = spec.expectStatus ?? 200;

// Each body cut at its tokens once, so that a request joins its parts with fresh ids.
const bodyParts = spec.freshIdToken ? spec.bodies?.map((body) => body.split(spec.freshIdToken!)) : undefined;

const freshId = spec.freshIdVersion === 7 ? () => uuidv7() : randomUUID;

function withFreshIds(parts: string[]): string {
  let body = parts[0]!;
  for (let i = 1; i < parts.length; i++) body += freshId() + parts[i]!;
  return body;
}

/** The body of the `index`th request: the spec's bodies in turn, with fresh ids when it has a token for them. */
function bodyOf(index: number): string | undefined {
  if (bodyParts) return withFreshIds(bodyParts[index % bodyParts.length]!);
  return spec.bodies?.[index % spec.bodies.length];
}

function send(): Promise<number> {
  const body = bodyOf(next++);
  const requestPath = spec.paths ? spec.paths[nextPath++ % spec.paths.length]! : url.pathname;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: requestPath,
        method: spec.method,
        headers: body ? { ...spec.headers, 'content-length': Buffer.byteLength(body) } : spec.headers,
      },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function main(): Promise<void> {
  // A request that fails (connection error, another status) counts as an error.
  const outcome = await runLoad(spec, () =>
    send().then(
      (status) => status === expected,
      () => false,
    ),
  );
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
  agent.destroy();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
