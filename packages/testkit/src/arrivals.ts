// Every body a worker sends is envelopes (one, or one per ndjson line), each starting with its type, timestamp and
// data.id: the event ids of a body are read off it without parsing it.
const EVENT_ID = /"data":\{"id":"([0-9a-f-]{36})"/g;

/**
 * Records `at` as the first arrival of each event id in `body` that `arrivals` does not hold yet (a redelivered
 * event counts once), and returns the ids it recorded.
 */
export function recordFirstArrivals(body: string, at: number, arrivals: Map<string, number>): string[] {
  const recorded: string[] = [];
  for (const [, id] of body.matchAll(EVENT_ID)) {
    if (arrivals.has(id!)) continue;
    arrivals.set(id!, at);
    recorded.push(id!);
  }
  return recorded;
}
