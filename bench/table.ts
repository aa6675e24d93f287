// One figures table (as in bench/HISTORY.md) from several `pnpm bench` results (bench/results/*.json): per figure,
// the range of its value and of its ratio to the in-run reference over the runs, and the last run's reference.
//   tsx bench/table.ts bench/results/run-1.json bench/results/run-2.json bench/results/run-3.json
import { readFileSync } from 'node:fs';
import type { Figure } from './measure';

interface Result {
  at: string;
  figures: Figure[];
}

const runs = process.argv.slice(2).map((file) => JSON.parse(readFileSync(file, 'utf8')) as Result);
if (runs.length === 0) {
  console.error('usage: tsx bench/table.ts <result.json>...');
  process.exit(2);
}

const format = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: n < 10 ? 3 : n < 1000 ? 1 : 0 });
const range = (values: number[]) => {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return lo === hi ? format(lo) : `${format(lo)} to ${format(hi)}`;
};

console.log(`| figure | value (${runs.length} runs) | unit | reference (last run) | ratio (${runs.length} runs) |`);
console.log('|---|---|---|---|---|');
// Figures are matched by their name; a figure missing from a run is shown over the runs that have it.
for (const last of runs.at(-1)!.figures) {
  const same = runs
    .map((r) => r.figures.find((f) => f.figure === last.figure))
    .filter((f): f is Figure => f !== undefined);
  const reference = last.reference === null ? '—' : `${last.reference}: ${format(last.referenceValue!)}`;
  const ratios = same.map((f) => f.ratio).filter((r): r is number => r !== null);
  console.log(
    `| ${last.figure} | ${range(same.map((f) => f.value))} | ${last.unit} | ${reference} | ${ratios.length > 0 ? range(ratios) : '—'} |`,
  );
}
const notes = runs.flatMap((r, i) =>
  r.figures.filter((f) => f.note).map((f) => `run ${i + 1}, ${f.figure}: ${f.note}`),
);
if (notes.length > 0) console.log(`\n${notes.map((n) => `- ${n}`).join('\n')}`);
console.log(`\nRuns: ${runs.map((r) => r.at).join(', ')}.`);
