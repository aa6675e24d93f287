import { version } from '../../../package.json';

/** Gatehook's version, from the root package.json. */
export const GATEHOOK_VERSION: string = version;

/** The User-Agent of every outbound delivery (CONTRACT: `Gatehook-Webhooks/<version>`). */
export const USER_AGENT = `Gatehook-Webhooks/${GATEHOOK_VERSION}`;
