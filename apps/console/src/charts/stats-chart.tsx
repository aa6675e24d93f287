import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { StatsBucket } from '../api';

// Loaded lazily (React.lazy in pages/webhook-stats.tsx): uPlot and this chart are a chunk of their own, fetched
// from the console's origin only when a webhook's page is opened.

const WIDTH = 1100;

interface Series {
  label: string;
  scale: 'count' | 'ms';
  stroke: string;
  fill?: string;
  width?: number;
  dash?: number[];
  /** Drawn as bars (deliveries by outcome); otherwise a line. */
  bar?: boolean;
}

const SERIES: Series[] = [
  { label: 'succeeded', scale: 'count', fill: '#16a34a', stroke: '#15803d', bar: true },
  { label: 'failed', scale: 'count', fill: '#dc2626', stroke: '#b91c1c', bar: true },
  { label: 'in flight', scale: 'count', fill: '#f59e0b', stroke: '#b45309', bar: true },
  { label: 'attempts', scale: 'count', stroke: '#1d4ed8', width: 2 },
  { label: 'p50 ms', scale: 'ms', stroke: '#7c3aed', width: 1, dash: [4, 4] },
  { label: 'p99 ms', scale: 'ms', stroke: '#0f172a', width: 1, dash: [2, 2] },
];
const HEIGHT = 260;

/** Deliveries per hour as bars (succeeded, failed, the rest), attempts as a line, p50 and p99 on a second axis. */
export default function StatsChart({ buckets }: { buckets: StatsBucket[] }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!host.current) return undefined;
    const bars = uPlot.paths.bars!({ size: [0.6, 40] });
    const data: uPlot.AlignedData = [
      buckets.map((b) => Date.parse(b.start) / 1000),
      buckets.map((b) => b.succeeded),
      buckets.map((b) => b.failed),
      buckets.map((b) => b.deliveries - b.succeeded - b.failed),
      buckets.map((b) => b.attempts),
      buckets.map((b) => b.p50_ms),
      buckets.map((b) => b.p99_ms),
    ];
    const plot = new uPlot(
      {
        width: Math.min(WIDTH, host.current.clientWidth || WIDTH),
        height: HEIGHT,
        scales: { count: { auto: true }, ms: { auto: true } },
        axes: [
          {},
          { scale: 'count', label: 'per hour' },
          { scale: 'ms', side: 1, label: 'attempt ms', grid: { show: false } },
        ],
        // uPlot's legend is a table; the legend below is a list, so the page's only tables hold data.
        legend: { show: false },
        series: [{ label: 'hour' }, ...SERIES.map(({ bar, ...s }) => (bar ? { ...s, paths: bars } : s))],
      },
      data,
      host.current,
    );
    return () => plot.destroy();
  }, [buckets]);
  return (
    <figure className="stats-chart">
      <div
        ref={host}
        data-testid="stats-chart"
        role="img"
        aria-label="Deliveries, attempts and attempt durations per hour; the numbers are in the table below"
      />
      <figcaption>
        <ul className="legend" aria-label="Legend">
          {SERIES.map((s) => (
            <li key={s.label}>
              <span className="swatch" style={{ background: s.fill ?? s.stroke }} aria-hidden="true" />
              {s.label}
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}
