import { auditEvent, useStack } from '@gatehook/testkit/stack';
import { until } from '@gatehook/testkit/until';

// A stack of its own: the stage histogram counts every delivery of the worker, so no other test may deliver meanwhile.
const stack = useStack();

describe('stage latency metric (gatehook_delivery_stage_seconds)', () => {
  it('shows where one delivery spent its time: ingest, fanout and send, the fanout stage only before its first attempt', async () => {
    const stageCounts = async (): Promise<Record<string, number>> => {
      const metric = await stack.engine.metrics.stages.get();
      const counts: Record<string, number> = { ingest: 0, fanout: 0, send: 0 };
      for (const v of metric.values)
        if (v.metricName === 'gatehook_delivery_stage_seconds_count') counts[String(v.labels.stage)] = v.value;
      return counts;
    };
    const own = await stack.receiver();
    // The first attempt fails, so the delivery's second attempt goes through the deliver queue and a lease.
    own.reply((_request, index) => (index === 0 ? { status: 503 } : { status: 200 }));
    const hook = await stack.webhook(own, { events: ['policy.created'] });
    // Creating the webhook recorded a webhook.created event of the organisation: once it is fanned out (no delivery,
    // the webhook subscribes to policy.created only), the counts move only with what this test sends.
    await until(stageCounts, (counts) => counts.ingest! >= 1);
    const before = await stageCounts();
    await stack.ingest([auditEvent()]);
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    const after = await stageCounts();
    // One event fanned out, one delivery's first attempt, two attempts answered; the retry is not a fan-out.
    expect({
      ingest: after.ingest! - before.ingest!,
      fanout: after.fanout! - before.fanout!,
      send: after.send! - before.send!,
    }).toEqual({ ingest: 1, fanout: 1, send: 2 });
    await own.close();
  });
});
