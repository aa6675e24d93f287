import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense, useState } from 'react';
import { api, type StatsBucket } from '../api';
import { ErrorBox, Loading, When } from '../ui';

const StatsChart = lazy(() => import('../charts/stats-chart'));

const RANGES = [24, 72, 168] as const;

/** A webhook's hourly statistics (CONTRACT 17) as a chart, with the same numbers as a table for screen readers. */
export function WebhookStats({ webhookId }: { webhookId: string }) {
  const [hours, setHours] = useState<number>(24);
  const stats = useQuery({
    queryKey: ['stats', webhookId, hours],
    queryFn: () => api<{ buckets: StatsBucket[] }>('GET', `/webhooks/${webhookId}/stats?hours=${hours}`),
    refetchInterval: 60_000,
    placeholderData: (previous) => previous,
  });
  const buckets = stats.data?.buckets ?? [];
  const total = (key: 'deliveries' | 'succeeded' | 'failed' | 'attempts') =>
    buckets.reduce((sum, b) => sum + b[key], 0);
  return (
    <section aria-labelledby="stats-title">
      <div className="title-row">
        <h2 id="stats-title">Hourly statistics</h2>
        <label>
          Range{' '}
          <select value={hours} onChange={(e) => setHours(Number(e.target.value))}>
            {RANGES.map((h) => (
              <option key={h} value={h}>
                last {h} h
              </option>
            ))}
          </select>
        </label>
      </div>
      <p className="muted">
        Deliveries are those created in the hour, succeeded and failed their outcome now; attempts and the p50/p99
        durations are the attempts made in the hour.
      </p>
      {stats.isPending && <Loading what="statistics" />}
      {stats.isError && <ErrorBox error={stats.error} what="Statistics" />}
      {stats.data && (
        <>
          <p data-testid="stats-totals">
            {total('deliveries')} deliveries · {total('succeeded')} succeeded · {total('failed')} failed ·{' '}
            {total('attempts')} attempts
          </p>
          <Suspense fallback={<Loading what="the chart" />}>
            <StatsChart buckets={buckets} />
          </Suspense>
          <details>
            <summary>The numbers, hour by hour</summary>
            <table>
              <caption className="sr-only">Deliveries per hour, oldest first</caption>
              <thead>
                <tr>
                  <th scope="col">Hour</th>
                  <th scope="col">Deliveries</th>
                  <th scope="col">Succeeded</th>
                  <th scope="col">Failed</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">p50 ms</th>
                  <th scope="col">p99 ms</th>
                </tr>
              </thead>
              <tbody>
                {buckets
                  .filter((b) => b.deliveries > 0)
                  .map((b) => (
                    <tr key={b.start}>
                      <td>
                        <When at={b.start} />
                      </td>
                      <td>{b.deliveries}</td>
                      <td>{b.succeeded}</td>
                      <td>{b.failed}</td>
                      <td>{b.attempts}</td>
                      <td>{b.p50_ms ?? '—'}</td>
                      <td>{b.p99_ms ?? '—'}</td>
                    </tr>
                  ))}
              </tbody>
            </table>
          </details>
        </>
      )}
    </section>
  );
}
