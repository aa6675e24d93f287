/** Writes docs/configuration.md from the config schema (`pnpm docs:config`). */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderConfigDocs } from '@gatehook/core/config-docs';

const target = resolve(__dirname, '../docs/configuration.md');
writeFileSync(target, renderConfigDocs());
console.log(`wrote ${target}`);
