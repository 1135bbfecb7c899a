/**
 * The resolved options' type where dead-letter-admin/ and outbox-admin/ still import it; the options live in
 * options/. Delete this file once the admin code imports the core through its public entry points.
 */
export type { ResolvedMessagingOptions } from './options/reliable-messaging.options';
