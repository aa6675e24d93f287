import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { CONFIG_GROUPS, envSchema } from '@gatehook/core/config';
import { CONFIG_DOCS_COMMAND, configVariables, renderConfigDocs } from '@gatehook/core/config-docs';

const docsFile = resolve(__dirname, '../../../docs/configuration.md');

describe('docs/configuration.md', () => {
  it('describes every variable of the schema, in a known group', () => {
    const variables = configVariables();
    expect(variables.map((v) => v.name)).toEqual(Object.keys(envSchema.shape));
    for (const variable of variables) {
      expect(variable.description.trim()).not.toBe('');
      expect(Object.keys(CONFIG_GROUPS)).toContain(variable.group);
      expect(variable.default).not.toBe('required');
    }
  });

  it('refuses a variable without a description', () => {
    const shape = {
      DOCUMENTED: z.string().default('x').meta({ group: 'api', description: 'Documented.' }),
      UNDOCUMENTED: z.string().default('y'),
    };
    expect(() => configVariables(shape)).toThrow(/UNDOCUMENTED has no description/);
    expect(() => configVariables({ UNGROUPED: z.string().meta({ description: 'No group.' }) })).toThrow(/UNGROUPED/);
  });

  it('shows defaults as a reader sets them, and labels the computed ones', () => {
    const byName = new Map(configVariables().map((v) => [v.name, v.default]));
    expect(byName.get('PORT')).toBe('`3000`');
    expect(byName.get('DELIVERY_RETRY_SCHEDULE')).toBe('`0,5,300,1800,7200,18000,36000,36000`');
    expect(byName.get('REDIS_CLUSTER_NODES')).toBe('empty');
    expect(byName.get('METRICS_TOKEN')).toBe('unset');
    expect(byName.get('RENDER_THREADS')).toBe('cores, at least `2`');
  });

  it(`matches the schema (run \`${CONFIG_DOCS_COMMAND}\` after changing it)`, () => {
    const rendered = renderConfigDocs();
    const onDisk = readFileSync(docsFile, 'utf8');
    if (onDisk !== rendered) {
      const want = rendered.split('\n');
      const have = onDisk.split('\n');
      const line = want.findIndex((text, i) => text !== have[i]);
      throw new Error(
        `docs/configuration.md differs from the schema in packages/core/src/config.ts (first at line ${line + 1}): ` +
          `run \`${CONFIG_DOCS_COMMAND}\` and commit the result.\n  schema: ${want[line]}\n  file:   ${have[line]}`,
      );
    }
  });
});
