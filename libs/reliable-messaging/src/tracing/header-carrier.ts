import type { TextMapGetter, TextMapSetter } from '@opentelemetry/api';

/**
 * Reads W3C trace headers from AMQP headers. amqplib hands back header strings as Buffers when the publisher
 * wrote them as byte arrays, so both shapes are read.
 */
export const amqpHeaderGetter: TextMapGetter<Record<string, unknown>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key];
    if (typeof value === 'string') return value;
    if (Buffer.isBuffer(value)) return value.toString('utf8');
    return undefined;
  },
};

/** Writes trace headers into AMQP headers. */
export const amqpHeaderSetter: TextMapSetter<Record<string, unknown>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};
