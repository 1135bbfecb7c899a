import { randomBytes } from 'node:crypto';
import { DEFAULT_AMQP_URL } from './test-broker';

// The docs/migrating.md examples (test/fixtures/migrating/) read their names and broker from the environment
// when they are imported: a spec imports this module before them, so they get names of their own under the
// `rm-e2e-` prefix, which the run's sweep removes.
process.env.MESSAGING_PREFIX = `rm-e2e-${randomBytes(4).toString('hex')}.`;
process.env.AMQP_URL ??= DEFAULT_AMQP_URL;
process.env.PORT = '0';
