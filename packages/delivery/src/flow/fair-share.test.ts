import { SendScheduler, type SendTarget, type SendTurn } from './fair-share';
import {
  INITIAL_ENDPOINT_LIMIT,
  MAX_TURN_AWAY_MS,
  MIN_TURN_AWAY_MS,
  RECALL_WINDOW_MS,
  UNKNOWN_HOLD_MS,
} from '../tunables';

const far = () => Date.now() + 60_000;
const quick = { statusCode: 200, error: null, durationMs: 3 };
const timeout = { statusCode: 0, error: 'timeout', durationMs: 15_000 };

function target(orgId: string, webhookId: string, origin = 'https://hooks.example.com'): SendTarget {
  return { orgId, webhookId, origin };
}

/** Requests waiting for their turn, with the turn each got once granted. */
function requests(scheduler: SendScheduler, to: SendTarget, count: number, deadline = far()) {
  const granted: SendTurn[] = [];
  const turnedAway: number[] = [];
  for (let i = 0; i < count; i += 1) {
    void scheduler.acquire(to, deadline).then((turn) => (turn ? granted.push(turn) : turnedAway.push(i)));
  }
  return { granted, turnedAway };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('SendScheduler', () => {
  it('is work-conserving: an organisation alone uses every slot, across its webhooks', async () => {
    const scheduler = new SendScheduler({ slots: 10, endpointMax: 50, originMax: 0, initialEndpointLimit: 50 });
    const a = requests(scheduler, target('A', 'a1'), 8);
    const b = requests(scheduler, target('A', 'a2'), 8);
    await settle();
    expect(a.granted.length + b.granted.length).toBe(10);
    expect(scheduler.active).toBe(10);
    expect(scheduler.waiting).toBe(6);
  });

  it('shares the slots equally between organisations under contention, whoever came first', async () => {
    const scheduler = new SendScheduler({ slots: 10, endpointMax: 50, originMax: 0, initialEndpointLimit: 50 });
    const a = requests(scheduler, target('A', 'a1'), 100);
    await settle();
    expect(a.granted).toHaveLength(10); // alone, A has everything
    const b = requests(scheduler, target('B', 'b1'), 100);
    await settle();
    expect(b.granted).toHaveLength(0);
    // As A's requests end, the freed slots go to B (fewer in flight) until both hold five.
    for (let i = 0; i < 5; i += 1) a.granted[i]!.release(quick);
    await settle();
    expect(b.granted).toHaveLength(5);
    // From there on a slot freed by either goes to the one with fewer in flight: five each, whoever finishes.
    let releasedA = 5;
    let releasedB = 0;
    for (let round = 0; round < 30; round += 1) {
      if (round % 3 === 0) b.granted[releasedB++]!.release(quick);
      else a.granted[releasedA++]!.release(quick);
      await settle();
      expect(scheduler.active).toBe(10);
      expect(a.granted.length - releasedA).toBe(5);
      expect(b.granted.length - releasedB).toBe(5);
    }
  });

  it("shares an organisation's slots between its webhooks", async () => {
    const scheduler = new SendScheduler({ slots: 6, endpointMax: 50, originMax: 0, initialEndpointLimit: 50 });
    const busy = requests(scheduler, target('A', 'busy'), 30);
    await settle();
    expect(busy.granted).toHaveLength(6);
    const other = requests(scheduler, target('A', 'other'), 30);
    await settle();
    for (let i = 0; i < 3; i += 1) busy.granted[i]!.release(quick);
    await settle();
    expect(other.granted).toHaveLength(3);
    expect(scheduler.inFlightOf('busy')).toBe(3);
    expect(scheduler.inFlightOf('other')).toBe(3);
  });

  it('a webhook that hangs ends up with one slot; its neighbours on the same origin keep the rest', async () => {
    const scheduler = new SendScheduler({ slots: 50, endpointMax: 50, originMax: 0 });
    // It answered quickly for a while, so its limit grew, then it hangs.
    const dead = requests(scheduler, target('A', 'dead'), 400);
    await settle();
    expect(dead.granted).toHaveLength(INITIAL_ENDPOINT_LIMIT); // its starting limit, not every slot
    let released = 0;
    while (scheduler.limitOf('dead') < 20) {
      dead.granted[released++]!.release(quick);
      await settle();
    }
    // Its requests now time out, one after the other; each fall lowers its limit, down to one.
    while (scheduler.limitOf('dead') > 1) {
      dead.granted[released++]!.release(timeout);
      await settle();
    }
    const inFlight = dead.granted.length;
    while (released < inFlight - 1) {
      dead.granted[released++]!.release(timeout);
      await settle();
    }
    expect(scheduler.limitOf('dead')).toBe(1);
    expect(scheduler.inFlightOf('dead')).toBe(1);
    // Twenty healthy webhooks of other tenants on the same origin get their slots at once.
    const healthy = Array.from({ length: 20 }, (_, i) => requests(scheduler, target(`T${i}`, `h${i}`), 2));
    await settle();
    expect(healthy.every((h) => h.granted.length === 2)).toBe(true);
  });

  it('a quick receiver climbs to DELIVERY_ENDPOINT_CONCURRENCY', async () => {
    const scheduler = new SendScheduler({ slots: 100, endpointMax: 30, originMax: 0 });
    const r = requests(scheduler, target('A', 'fast'), 500);
    await settle();
    for (let i = 0; i < 200; i += 1) {
      r.granted[i]!.release(quick);
      await settle();
    }
    expect(scheduler.limitOf('fast')).toBe(30);
    expect(scheduler.inFlightOf('fast')).toBe(30);
  });

  it('keeps an optional ceiling per origin (DELIVERY_ORIGIN_CONCURRENCY), and none by default', async () => {
    const capped = new SendScheduler({ slots: 50, endpointMax: 50, originMax: 3, initialEndpointLimit: 50 });
    const one = requests(capped, target('A', 'w1'), 5);
    const two = requests(capped, target('B', 'w2'), 5);
    const elsewhere = requests(capped, target('C', 'w3', 'https://other.example'), 3);
    await settle();
    expect(one.granted.length + two.granted.length).toBe(3);
    expect(elsewhere.granted).toHaveLength(3); // a ceiling of its own, not taken by the full origin
    expect(capped.isFull('w1')).toBe(true);
    const open = new SendScheduler({ slots: 50, endpointMax: 50, originMax: 0, initialEndpointLimit: 50 });
    const many = Array.from({ length: 5 }, (_, i) => requests(open, target(`O${i}`, `w${i}`), 5));
    await settle();
    expect(many.reduce((n, r) => n + r.granted.length, 0)).toBe(25);
  });

  it('turns a request away at its deadline, and at once when its webhook cannot serve the queue before it', async () => {
    // Times in hundreds of ms, so that a stall of the test's event loop does not pass a deadline meant to be met.
    const scheduler = new SendScheduler({ slots: 50, endpointMax: 1, originMax: 0 });
    const first = await scheduler.acquire(target('A', 'slow'), far());
    expect(first).not.toBeNull();
    // No pace known yet: a request beyond the line waits for a first answer, here until its own deadline, 20 ms away.
    expect(await scheduler.acquire(target('A', 'slow'), Date.now() + 20)).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 200));
    first!.release(timeout); // its pace is now known: about 200 ms
    const second = await scheduler.acquire(target('A', 'slow'), far());
    await new Promise((resolve) => setTimeout(resolve, 300));
    second!.release(timeout); // held 300 ms: a queue of several cannot be served within a 400 ms deadline
    const third = await scheduler.acquire(target('A', 'slow'), far());
    const waiting = [
      scheduler.acquire(target('A', 'slow'), Date.now() + 400),
      scheduler.acquire(target('A', 'slow'), Date.now() + 400),
    ];
    expect(await waiting[1]).toBeNull();
    third!.release(quick);
    expect(await waiting[0]).not.toBeNull();
  });

  it('remembers turned-away deliveries by webhook, and spaces their return by its pace', () => {
    const scheduler = new SendScheduler({ slots: 50, endpointMax: 1, originMax: 0 });
    scheduler.noteWaiting('d1', 'w');
    expect(scheduler.waitingFor('d1')).toBe('w');
    const now = Date.now();
    const at = scheduler.retryAt('w', now).getTime() - now;
    expect(at).toBeGreaterThanOrEqual(MIN_TURN_AWAY_MS);
    expect(at).toBeLessThanOrEqual(MAX_TURN_AWAY_MS + 1000);
    scheduler.doneWaiting('d1');
    expect(scheduler.waitingFor('d1')).toBeUndefined();
  });

  it('a receiver that has not answered yet: its queue shrinks as its requests age, and the excess goes at once', async () => {
    const scheduler = new SendScheduler({ slots: 50, endpointMax: 1, originMax: 0 });
    const to = target('A', 'silent');
    const first = await scheduler.acquire(to, far());
    expect(first).not.toBeNull(); // in flight, and it never answers
    const started = Date.now();
    const results: (SendTurn | null | 'waiting')[] = ['waiting', 'waiting', 'waiting'];
    for (let i = 0; i < 3; i += 1) void scheduler.acquire(to, started + 1000).then((turn) => (results[i] = turn));
    await settle();
    expect(results).toEqual(['waiting', 'waiting', 'waiting']); // no pace known and nothing old yet: they wait
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Its one request has held its slot 300 ms: four in line cannot all be served within the second left.
    expect(await scheduler.acquire(to, Date.now() + 1000)).toBeNull();
    await settle();
    expect(results[2]).toBeNull(); // the newest waiter was turned away too, long before its deadline
    expect(Date.now() - started).toBeLessThan(900);
    first!.release(timeout);
  });

  it('recalls deliveries it turned away once their webhook has room, oldest first, as many as the room', async () => {
    const recalls: string[][] = [];
    const scheduler = new SendScheduler({
      slots: 50,
      endpointMax: 2,
      originMax: 0,
      recall: (ids) => recalls.push(ids),
    });
    const to = target('A', 'w');
    const turns = [await scheduler.acquire(to, far()), await scheduler.acquire(to, far())];
    for (const id of ['d1', 'd2', 'd3', 'd4', 'd5']) scheduler.noteWaiting(id, 'w');
    // A waiter in line goes first: nothing is recalled while one waits.
    const waiter = scheduler.acquire(to, far());
    turns[0]!.release(quick);
    const third = await waiter;
    expect(recalls).toEqual([]);
    // Room for one (limit 2, one in flight): the oldest turned away comes back, and counts against the room while on its way.
    turns[1]!.release(quick);
    expect(recalls).toEqual([['d1']]);
    expect(scheduler.waitingFor('d1')).toBeUndefined();
    expect(scheduler.isRecalled('d1')).toBe(true);
    third!.release(quick);
    expect(recalls).toEqual([['d1'], ['d2']]);
    // Back (its job runs): it no longer counts, so the next release recalls two.
    scheduler.doneWaiting('d1');
    expect(scheduler.isRecalled('d1')).toBe(false);
    scheduler.doneWaiting('d2');
    const again = await scheduler.acquire(to, far());
    again!.release(quick);
    expect(recalls.at(-1)).toEqual(['d3', 'd4']);
  });

  it('does not recall into a webhook that is full, and stops counting recalls that never came back', async () => {
    const recalls: string[][] = [];
    const scheduler = new SendScheduler({
      slots: 50,
      endpointMax: 1,
      originMax: 0,
      recall: (ids) => recalls.push(ids),
    });
    const to = target('A', 'w');
    const first = await scheduler.acquire(to, far());
    scheduler.noteWaiting('d1', 'w');
    scheduler.noteWaiting('d2', 'w');
    expect(scheduler.isFull('w')).toBe(true);
    first!.release(quick);
    expect(recalls).toEqual([['d1']]); // d1's job never runs here (another worker took it)
    const second = await scheduler.acquire(to, far());
    second!.release(quick);
    expect(recalls).toEqual([['d1']]); // d1 still counts against the room
    await new Promise((resolve) => setTimeout(resolve, RECALL_WINDOW_MS + 20));
    const third = await scheduler.acquire(to, far());
    third!.release(quick);
    expect(recalls).toEqual([['d1'], ['d2']]);
  });

  it('a receiver that has never answered: the excess of a burst waits for its first answer, then goes', async () => {
    const scheduler = new SendScheduler({ slots: 300, endpointMax: 50, originMax: 0 });
    const to = target('A', 'fresh');
    const started = Date.now();
    const burst = requests(scheduler, to, 100, started + 2000); // SLOT_WAIT_MS
    await settle();
    expect(burst.granted).toHaveLength(INITIAL_ENDPOINT_LIMIT);
    // Nothing is turned away before the receiver has had UNKNOWN_HOLD_MS to answer.
    expect(burst.turnedAway).toHaveLength(0);
    expect(scheduler.waiting).toBe(100 - INITIAL_ENDPOINT_LIMIT);
    // It hangs: past that, the line is what its starting limit can serve within the deadline at the age of its
    // requests, and the rest goes, long before the deadline (they do not hold the room for it).
    const line = Math.floor((2000 / UNKNOWN_HOLD_MS) * INITIAL_ENDPOINT_LIMIT);
    await new Promise((resolve) => setTimeout(resolve, UNKNOWN_HOLD_MS + 50));
    expect(scheduler.waiting).toBeLessThanOrEqual(line);
    expect(burst.turnedAway.length).toBeGreaterThanOrEqual(100 - INITIAL_ENDPOINT_LIMIT - line);
    expect(Date.now() - started).toBeLessThan(1500);
    // A request arriving now, beyond the line, is turned away at once.
    expect(await scheduler.acquire(to, Date.now() + 2000)).toBeNull();
    for (const turn of burst.granted) turn.release(timeout);
  });

  it('a fresh receiver that answers quickly has its whole burst served at its pace, none turned away', async () => {
    const scheduler = new SendScheduler({ slots: 300, endpointMax: 50, originMax: 0 });
    const to = target('A', 'fresh');
    const burst = requests(scheduler, to, 100, Date.now() + 2000);
    await settle();
    expect(burst.turnedAway).toHaveLength(0);
    // Its first answers are quick: the waiters are judged by that pace and keep the deadline they asked for, past the
    // window in which they waited for a first answer.
    for (let served = 0; served < 100; served += 1) {
      await settle();
      burst.granted[served]!.release(quick);
    }
    expect(burst.granted).toHaveLength(100);
    await new Promise((resolve) => setTimeout(resolve, UNKNOWN_HOLD_MS + 50));
    expect(burst.turnedAway).toHaveLength(0);
    // Its pace is known now: a second burst waits in a line as long as the deadline allows.
    const more = requests(scheduler, to, 100, Date.now() + 2000);
    await settle();
    expect(more.turnedAway).toHaveLength(0);
  });

  it('a fresh receiver whose first answers are slowish but 2xx: its burst is judged by the limit it climbs to, not turned away', async () => {
    // A cold receiver (new TLS sessions, a process warming up) answers its first requests in a couple of hundred ms.
    // Judged by its starting limit of 2, a line of 100 could not be served within the 2 s deadline (100 / 3 × 200 ms);
    // its limit climbs with each quick answer towards the ceiling (50), at which the line goes in 100 / 50 × 200 ms.
    const scheduler = new SendScheduler({ slots: 300, endpointMax: 50, originMax: 0 });
    const to = target('A', 'cold');
    const burst = requests(scheduler, to, 100, Date.now() + 2_000);
    await settle();
    expect(burst.granted).toHaveLength(INITIAL_ENDPOINT_LIMIT);
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const turn of burst.granted.slice(0, INITIAL_ENDPOINT_LIMIT)) turn.release({ ...quick, durationMs: 200 });
    await settle();
    expect(burst.turnedAway).toHaveLength(0);
    expect(burst.granted.length).toBeGreaterThan(INITIAL_ENDPOINT_LIMIT);

    // A receiver that is out of breath (503) is judged by its limit as it stands: the excess goes at once.
    const tired = target('A', 'tired');
    const second = requests(scheduler, tired, 100, Date.now() + 2_000);
    await settle();
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const turn of second.granted.slice(0, INITIAL_ENDPOINT_LIMIT))
      turn.release({ statusCode: 503, error: null, durationMs: 200 });
    await settle();
    expect(second.turnedAway.length).toBeGreaterThan(0);
  });

  it('recalls nothing when a slot is handed back unused (a paced request refused its turn)', async () => {
    const recalls: string[][] = [];
    const scheduler = new SendScheduler({
      slots: 50,
      endpointMax: 2,
      originMax: 0,
      recall: (ids) => recalls.push(ids),
    });
    const turn = await scheduler.acquire(target('A', 'paced'), far());
    scheduler.noteWaiting('d1', 'paced');
    turn!.release();
    expect(recalls).toEqual([]);
    const sent = await scheduler.acquire(target('A', 'paced'), far());
    sent!.release(quick);
    expect(recalls).toEqual([['d1']]);
  });
});
