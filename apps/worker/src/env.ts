import { parseConfig, type Config } from '@gatehook/core/config';

/** The worker's configuration: the one place in the worker that reads process.env. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  return parseConfig(env);
}
