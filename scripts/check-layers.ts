/**
 * `pnpm check:layers`: fails when an import points up.
 *
 * Inside packages/delivery a module imports from its own layer and the layers below it, never from one above
 * (DELIVERY_LAYERS, lowest first: the one place the order is written). Every module of the package must belong to a
 * layer, so a new file is placed on purpose. apps/worker/src talks to the engine only through its public entry
 * (`@gatehook/delivery`), never a module path below it. Test files are not checked: a test may reach for anything
 * it exercises.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** packages/delivery/src, lowest layer first; an entry ending in `/` is a folder, any other a file. */
export const DELIVERY_LAYERS: readonly { name: string; modules: readonly string[] }[] = [
  { name: 'tunables', modules: ['tunables.ts'] },
  {
    name: 'decisions',
    modules: ['state/delivery-error.ts', 'state/schedule.ts', 'state/outcome.ts', 'state/circuit-breaker.ts'],
  },
  { name: 'flow control', modules: ['flow/'] },
  { name: 'queues', modules: ['queues/'] },
  {
    name: 'bodies and webhook configuration',
    modules: ['render/', 'audit-event-input.ts', 'webhook-configs.ts', 'request-view.ts'],
  },
  { name: 'webhook status', modules: ['state/webhook.ts'] },
  { name: 'context', modules: ['context.ts', 'local-run.ts'] },
  { name: 'attempt', modules: ['attempt/'] },
  { name: 'pipeline', modules: ['pipeline/', 'ingest.ts'] },
  { name: 'tasks', modules: ['tasks/'] },
  { name: 'engine', modules: ['engine.ts'] },
  { name: 'public entry', modules: ['index.ts'] },
];

const root = path.resolve(__dirname, '..');
const deliverySrc = path.join(root, 'packages/delivery/src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.ts$/.test(entry.name) && !/\.test\.ts$/.test(entry.name) ? [full] : [];
  });
}

function imports(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

function layerOf(relative: string): number {
  return DELIVERY_LAYERS.findIndex((layer) =>
    layer.modules.some((m) => (m.endsWith('/') ? relative.startsWith(m) : relative === m)),
  );
}

/** The module a relative import names, relative to packages/delivery/src (`x` → `x.ts`, `dir` → `dir/index.ts`). */
function resolveRelative(from: string, specifier: string): string {
  const target = path.resolve(path.dirname(from), specifier);
  const candidates = [`${target}.ts`, path.join(target, 'index.ts'), target];
  const found = candidates.find((c) => existsSync(c));
  return path.relative(deliverySrc, found ?? `${target}.ts`);
}

const problems: string[] = [];

for (const file of sourceFiles(deliverySrc)) {
  const relative = path.relative(deliverySrc, file);
  if (/\.fixture\.ts$/.test(relative)) continue;
  const own = layerOf(relative);
  if (own < 0) {
    problems.push(`packages/delivery/src/${relative} belongs to no layer (DELIVERY_LAYERS in scripts/check-layers.ts)`);
    continue;
  }
  for (const specifier of imports(file)) {
    if (!specifier.startsWith('.')) continue;
    const target = resolveRelative(file, specifier);
    const theirs = layerOf(target);
    if (theirs > own) {
      problems.push(
        `packages/delivery/src/${relative} (${DELIVERY_LAYERS[own]!.name}) imports ${target} (${DELIVERY_LAYERS[theirs]!.name}), a layer above it`,
      );
    }
  }
}

for (const file of sourceFiles(path.join(root, 'apps/worker/src'))) {
  for (const specifier of imports(file)) {
    if (specifier.startsWith('@gatehook/delivery/')) {
      problems.push(
        `${path.relative(root, file)} imports ${specifier}: the worker uses the engine's public entry, @gatehook/delivery`,
      );
    }
  }
}

if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  console.error(`${problems.length} import(s) against the layers`);
  process.exit(1);
}
console.log('imports point down: no upward import in packages/delivery, the worker uses only @gatehook/delivery');
