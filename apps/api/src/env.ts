import { developerCommandEnv, parseConfig, type Config } from '@gatehook/core/config';

/** The API's configuration: the one place that reads process.env. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  return parseConfig(env);
}

/** The configuration of the `gatehook` CLI: NODE_ENV unset means development only for a database on this machine. */
export function loadCommandConfig(env: Record<string, string | undefined> = process.env): Config {
  return parseConfig(developerCommandEnv(env));
}
