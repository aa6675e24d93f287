import { z } from 'zod';
import { CONFIG_GROUPS, type ConfigDoc, type ConfigGroup, envSchema } from './config';

/** One environment variable as docs/configuration.md lists it. */
export interface ConfigVariable {
  name: string;
  group: ConfigGroup;
  description: string;
  /** Markdown: a value in backticks, `empty`, `unset`, or the schema's label of a computed default. */
  default: string;
  see?: string;
}

/** The command that writes docs/configuration.md, named in its header and in the test that compares it. */
export const CONFIG_DOCS_COMMAND = 'pnpm docs:config';

/** Every variable of the schema with its documentation; throws naming a variable whose metadata is missing. */
export function configVariables(shape: Record<string, z.ZodType> = envSchema.shape): ConfigVariable[] {
  return Object.entries(shape).map(([name, schema]) => {
    const doc = schema.meta() as Partial<ConfigDoc> | undefined;
    if (!doc?.description || !doc.group || !Object.hasOwn(CONFIG_GROUPS, doc.group)) {
      throw new Error(
        `${name} has no description or group: add .meta(about(group, description)) to it in packages/core/src/config.ts`,
      );
    }
    return {
      name,
      group: doc.group,
      description: doc.description,
      default: doc.defaultLabel ?? defaultOf(schema),
      ...(doc.see ? { see: doc.see } : {}),
    };
  });
}

function defaultOf(schema: z.ZodType): string {
  if (schema instanceof z.ZodOptional) return 'unset';
  if (!(schema instanceof z.ZodDefault)) return 'required';
  const value: unknown = schema.def.defaultValue;
  if (Array.isArray(value)) return value.length === 0 ? 'empty' : `\`${value.join(',')}\``;
  if (typeof value === 'object' && value !== null)
    return Object.keys(value).length === 0 ? 'empty' : `\`${JSON.stringify(value)}\``;
  if (value === '') return 'empty';
  return `\`${String(value)}\``;
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

/** A title's anchor as GitHub makes it. */
const anchor = (title: string) =>
  title
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replaceAll(' ', '-');

/** docs/configuration.md, rendered from the schema. */
export function renderConfigDocs(variables: ConfigVariable[] = configVariables()): string {
  const groups = (Object.keys(CONFIG_GROUPS) as ConfigGroup[]).filter((group) =>
    variables.some((v) => v.group === group),
  );
  const lines = [
    '# Configuration',
    '',
    `<!-- Generated from the schema in packages/core/src/config.ts by \`${CONFIG_DOCS_COMMAND}\`: edit the schema, not this file. -->`,
    '',
    'Every setting of the API and the worker is an environment variable, parsed once at start-up; an invalid value',
    'stops the process with a message naming every invalid variable. An empty variable counts as unset. The variables',
    'of the tests and the bench (`BENCH_*`, `GATEHOOK_TEST_SERVICE_NODE_FLAGS`) are in',
    '[`bench/README.md`](../bench/README.md).',
    '',
    groups.map((group) => `[${CONFIG_GROUPS[group]}](#${anchor(CONFIG_GROUPS[group])})`).join(' · '),
  ];
  for (const group of groups) {
    lines.push('', `## ${CONFIG_GROUPS[group]}`, '', '| variable | default | meaning |', '|---|---|---|');
    for (const variable of variables.filter((v) => v.group === group)) {
      const see = variable.see ? ` See [${variable.see.split('#')[0]}](${variable.see}).` : '';
      lines.push(`| \`${variable.name}\` | ${cell(variable.default)} | ${cell(variable.description + see)} |`);
    }
  }
  return `${lines.join('\n')}\n`;
}
