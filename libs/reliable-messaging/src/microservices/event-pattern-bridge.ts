import { Injectable } from '@nestjs/common';

/** The transport id of ReliableMessagingTransport, for `@EventPattern(pattern, RELIABLE_MESSAGING_TRANSPORT)`. */
export const RELIABLE_MESSAGING_TRANSPORT = Symbol('reliable-messaging');

/**
 * What the core needs to know of ReliableMessagingTransport, kept by the core so that it never loads
 * `@nestjs/microservices` itself: whether an app connected the transport (Nest handed it patterns), and whether
 * the consumers are planned already (a pattern handed over later would have no queue). The transport, in
 * `ReliableMessagingMicroservicesModule`, writes it; the registrar reads it.
 */
@Injectable()
export class EventPatternBridge {
  readonly transportId = RELIABLE_MESSAGING_TRANSPORT;

  /** True once an app connected the transport: Nest handed it the app's patterns. */
  connected = false;

  /** True once the module has planned its consumers. */
  planned = false;
}
