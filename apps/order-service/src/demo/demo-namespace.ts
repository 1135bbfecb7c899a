import { randomBytes } from 'node:crypto';

/**
 * The run's namespace (`demo-<random>`), set in MESSAGING_NAMESPACE before any module of the app loads.
 * NOTE: `@Consume()` queue names are fixed when the consumer classes load, and the demo boots the app's
 * dead-letter tool in its own process: the namespace must be in the environment first, so demo.ts imports this
 * module before everything else.
 */
export const DEMO_RUN_ID = randomBytes(4).toString('hex');
process.env.MESSAGING_NAMESPACE = `demo-${DEMO_RUN_ID}`;
